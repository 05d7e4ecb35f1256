"""Hostile connections against a real `kop serve`: connections that never send,
that announce a huge request and trickle it, that pipeline requests without
reading the answers, and more connections than `max_connections`. A well-behaved
client connected beside them is answered (produce and fetch) while they are open;
each of them is closed by kop for its own reason; what they held of the request and
answer budgets goes back; afterwards kop accepts and serves new connections."""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from tests.integration.admin import create_topic
from tests.integration.conftest import KopProcess
from tests.integration.observe import metric
from tests.sockets import closed_by_peer

SILENT, TRICKLERS, PIPELINERS, REFUSED = 4, 4, 3, 5
MAX_CONNECTIONS = 1 + SILENT + TRICKLERS + PIPELINERS  # the well-behaved client too


def _closed(gateway: KopProcess, reason: str) -> float:
    return metric(gateway, f'kop_connections_closed_total{{reason="{reason}"}}') or 0.0


def _until(condition: object, within: float, what: str, gateway: KopProcess) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within}s\n{gateway.log_text()[-3000:]}")
        time.sleep(0.1)


def _trickle(sock: socket.socket, stop: threading.Event) -> None:
    while not stop.wait(0.1):
        try:
            sock.send(b"x")
        except OSError:
            return


def _flood(sock: socket.socket, frame: bytes, stop: threading.Event) -> None:
    """Sends `frame` over and over, never reading, while kop takes it."""
    chunk = frame * 64
    sock.settimeout(0.5)
    while not stop.is_set():
        try:
            sock.send(chunk)
        except TimeoutError:
            continue  # kop stopped reading; keep trying until it closes us
        except OSError:
            return


def test_hostile_connections_are_closed_and_a_client_beside_them_is_served(
    pulsar: str, tmp_path: Path, topic: str
) -> None:
    gateway = KopProcess(
        tmp_path,
        KOP_MAX_CONNECTIONS=str(MAX_CONNECTIONS),
        KOP_IDLE_TIMEOUT_S="8",
        KOP_CONNECTION_SETUP_TIMEOUT_S="60",  # the silent ones meet the idle timeout
        KOP_REQUEST_RECEIVE_TIMEOUT_S="4",
        KOP_RESPONSE_SEND_TIMEOUT_S="4",
    )
    gateway.start()
    stop = threading.Event()
    hostile: list[socket.socket] = []
    try:
        create_topic(gateway.bootstrap, topic)
        client = RawClient(gateway.port)
        for _ in range(4):  # answers of about 3.6 MB for the pipelined fetches
            batch = build_batch([Record(0, 1_700_000_000_000, None, bytes(900_000))])
            assert client.produce(topic, batch)[0] == 0
        _until(lambda: metric(gateway, "kop_connections") == 1, 10, "admin gone", gateway)

        def connect() -> socket.socket:
            sock = socket.create_connection(("127.0.0.1", gateway.port), timeout=10)
            hostile.append(sock)
            return sock

        silent = [connect() for _ in range(SILENT)]
        tricklers = [connect() for _ in range(TRICKLERS)]
        for sock in tricklers:
            sock.sendall(struct.pack(">i", 50 << 20) + bytes(30_000))
            threading.Thread(target=_trickle, args=(sock, stop), daemon=True).start()
        _, fetch = client.encode(1, 12, **RawClient.fetch_fields(topic, 0))
        pipeliners = [connect() for _ in range(PIPELINERS)]
        for sock in pipeliners:
            framed = struct.pack(">i", len(fetch)) + fetch
            threading.Thread(target=_flood, args=(sock, framed, stop), daemon=True).start()
        _until(
            lambda: metric(gateway, "kop_connections") == MAX_CONNECTIONS, 10, "all open", gateway
        )
        refused = [connect() for _ in range(REFUSED)]
        for sock in refused:  # past max_connections: the newest are closed at once
            assert closed_by_peer(sock, 10)
        assert _closed(gateway, "max_connections") == REFUSED

        # The well-behaved client is served while all of them are open.
        batch = build_batch([Record(0, 1_700_000_000_000, None, b"beside the hostile")])
        code, offset = client.produce(topic, batch)
        assert (code, offset) == (0, 4)
        fetched = client.fetch(topic, 4)
        assert fetched.responses[0].partitions[0].error_code == 0
        assert fetched.responses[0].partitions[0].records

        for sock in silent + tricklers + pipeliners:
            assert closed_by_peer(sock, 30), "kop kept a hostile connection open"
        assert _closed(gateway, "idle") >= SILENT
        assert _closed(gateway, "receive_timeout") == TRICKLERS
        assert _closed(gateway, "send_timeout") == PIPELINERS
        assert metric(gateway, "kop_request_memory_bytes") == 0
        _until(
            lambda: metric(gateway, "kop_answer_memory_bytes") == 0, 10, "answers freed", gateway
        )
        # Room again: a new client is accepted and served.
        fresh = RawClient(gateway.port)
        versions = fresh.request(18, 3, client_software_name="raw", client_software_version="1")
        assert versions.error_code == 0
        fresh.close()
        client.close()
        assert gateway.proc is not None and gateway.proc.poll() is None
    finally:
        stop.set()
        for sock in hostile:
            sock.close()
        gateway.stop()
