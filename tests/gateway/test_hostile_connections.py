"""Connections that abuse the gateway are bounded, and cost the others nothing they
would notice: the newest past `max_connections` is closed; a frame that trickles
is closed at its deadline; frames that hold the shared request budget make large
frames wait but never small ones; a client that pipelines without reading its
answers stops being read and is closed, and answers nobody reads stay within
their budget. The whole gateway runs over the in-memory storage, through sockets."""

from __future__ import annotations

import asyncio
import datetime
import gc
import socket
import struct
import threading
import time
import tracemalloc
import weakref
from typing import Any

from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from kop.server.stream import RequestStream
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import gateway_with_hot_topic, until
from tests.sockets import closed_by_peer

MiB = 1 << 20


def _closed(gateway: Gateway, reason: str) -> float:
    return float(gateway.metrics.closed.labels(reason)._value.get())


def _open(gateway: Gateway) -> float:
    return float(gateway.metrics.connections._value.get())


def _versions(client: RawClient) -> Any:
    return client.request(18, 3, client_software_name="t", client_software_version="1")


def _produce_fields(value: bytes) -> dict[str, Any]:
    batch = build_batch([Record(0, 1_700_000_000_000, None, value)])
    data = PartitionProduceData(index=0, records=batch)
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout": datetime.timedelta(seconds=30),
        "topic_data": (TopicProduceData(name="hot", partition_data=(data,)),),
    }


def _produced(client: RawClient, value: bytes) -> int:
    response = client.request(0, 9, **_produce_fields(value))
    return int(response.responses[0].partition_responses[0].error_code)


def _raw(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


class _Trickle:
    """Sends one byte every 50 ms on a thread until the socket fails."""

    def __init__(self, sock: socket.socket) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(sock,), daemon=True)
        self._thread.start()

    def _run(self, sock: socket.socket) -> None:
        while not self._stop.wait(0.05):
            try:
                sock.send(b"x")
            except OSError:
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _pipeline_without_reading(sock: socket.socket, frame: bytes, within: float) -> int:
    """Sends `frame` over and over, never reading; returns the bytes the socket took
    once sending blocks for good (kop stopped reading). Fails after `within` s."""
    chunk = frame * 256
    sock.setblocking(False)
    sent = 0
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            sent += sock.send(chunk)
        except BlockingIOError:
            time.sleep(0.5)  # kop may be between two reads: blocked for good?
            try:
                sent += sock.send(chunk)
            except (BlockingIOError, ConnectionError):  # blocked, or closed by now
                return sent
    raise AssertionError(f"kop kept reading: {sent} bytes taken in {within}s")


def _encoded(api_key: int, version: int, **fields: Any) -> bytes:
    _, payload = RawClient.__new__(RawClient).encode_standalone(api_key, version, **fields)
    return struct.pack(">i", len(payload)) + payload


async def test_past_max_connections_the_newest_is_closed_and_the_others_served() -> None:
    async with gateway_with_hot_topic(1, max_connections=3) as (gateway, _):
        clients = [RawClient(gateway.kafka_port) for _ in range(3)]
        for client in clients:
            assert (await asyncio.to_thread(_versions, client)).error_code == 0
        newest = RawClient(gateway.kafka_port)
        assert await asyncio.to_thread(newest.wait_closed_by_peer, 5)
        assert _closed(gateway, "max_connections") == 1
        for client in clients:  # the connections already served keep their service
            assert (await asyncio.to_thread(_versions, client)).error_code == 0
        clients.pop().close()
        await until(lambda: _open(gateway) == 2, 5)
        again = RawClient(gateway.kafka_port)  # room again: served
        assert (await asyncio.to_thread(_versions, again)).error_code == 0
        for client in [*clients, again, newest]:
            client.close()


async def test_a_trickled_frame_is_closed_at_its_deadline_and_its_memory_returned() -> None:
    async with gateway_with_hot_topic(1, request_receive_timeout_s=0.5) as (gateway, _):
        other = RawClient(gateway.kafka_port)
        trickler = _raw(gateway.kafka_port)
        trickler.sendall(struct.pack(">i", 50 * MiB) + b"x" * 40_000)
        trickle = _Trickle(trickler)  # always sending: the idle timeout never comes
        assert (await asyncio.to_thread(_versions, other)).error_code == 0
        listener = gateway.listener
        assert listener is not None
        await until(lambda: listener.requests.used > 0, 5)
        assert listener.requests.used < 1 * MiB  # what arrived, not the 50 MiB announced
        assert await asyncio.to_thread(closed_by_peer, trickler, 10)
        trickle.stop()
        assert _closed(gateway, "receive_timeout") == 1 and _closed(gateway, "idle") == 0
        await until(lambda: listener.requests.used == 0, 5)
        assert (await asyncio.to_thread(_versions, other)).error_code == 0
        other.close()
        trickler.close()


async def test_a_spent_request_budget_delays_large_frames_never_small_ones() -> None:
    config = {"max_queued_request_bytes": MiB, "request_receive_timeout_s": 1.5}
    async with gateway_with_hot_topic(1, **config) as (gateway, _):
        listener = gateway.listener
        assert listener is not None
        client = RawClient(gateway.kafka_port)
        assert await asyncio.to_thread(_produced, client, b"warm") == 0
        holders = []
        for _ in range(3):  # each sends most of a 1 MiB frame, then nothing more
            holder = _raw(gateway.kafka_port)
            holder.sendall(struct.pack(">i", MiB) + bytes(900_000))
            holders.append(holder)
        await until(lambda: listener.requests.waiting >= 1, 5)
        assert listener.requests.used <= MiB + MiB  # the limit, plus one frame past it
        # Small requests need nothing of the budget: answered at once.
        assert (await asyncio.to_thread(_versions, client)).error_code == 0
        # A large one waits its turn, and is answered once holders before it are
        # closed (each late from the moment it got memory, not while it waited).
        producer = RawClient(gateway.kafka_port)
        assert await asyncio.to_thread(_produced, producer, bytes(600_000)) == 0
        assert _closed(gateway, "receive_timeout") >= 1  # it waited for one to go
        await until(lambda: _closed(gateway, "receive_timeout") == 3, 10)
        for holder in holders:
            assert await asyncio.to_thread(closed_by_peer, holder, 5)
        await until(lambda: listener.requests.used == 0, 5)
        for sock in [client.sock, producer.sock, *holders]:
            sock.close()


async def test_a_client_not_reading_its_answers_is_no_longer_read_then_closed() -> None:
    async with gateway_with_hot_topic(1, response_send_timeout_s=1.0) as (gateway, _):
        listener = gateway.listener
        assert listener is not None
        client = RawClient(gateway.kafka_port)
        for _ in range(4):
            assert await asyncio.to_thread(_produced, client, bytes(900_000)) == 0
        fetch = _encoded(1, 12, **RawClient.fetch_fields("hot", 0))  # ~3.6 MB answers
        hostile = _raw(gateway.kafka_port)
        taken = await asyncio.to_thread(_pipeline_without_reading, hostile, fetch, 30)
        assert taken < 64 * MiB  # kernel buffers, plus what kop read ahead: then it stopped
        assert (await asyncio.to_thread(_versions, client)).error_code == 0  # others served
        await until(lambda: _closed(gateway, "send_timeout") == 1, 10)
        assert await asyncio.to_thread(closed_by_peer, hostile, 5)
        await until(lambda: listener.answers.used == 0, 5)
        client.close()
        hostile.close()


async def test_answers_nobody_reads_stay_within_their_budget() -> None:
    config = {"max_queued_response_bytes": 4 * MiB, "response_send_timeout_s": 2.0}
    async with gateway_with_hot_topic(1, **config) as (gateway, _):
        listener = gateway.listener
        assert listener is not None
        client = RawClient(gateway.kafka_port)
        for _ in range(8):
            assert await asyncio.to_thread(_produced, client, bytes(900_000)) == 0
        fetch = _encoded(1, 12, **RawClient.fetch_fields("hot", 0))
        hostile = [_raw(gateway.kafka_port) for _ in range(12)]
        for sock in hostile:
            # Then never read. Each answer is one 900 kB batch (KIP-74: the next does not
            # fit in 1 MiB): more than the kernel's socket buffers take, so kop holds some.
            sock.sendall(fetch * 8)
        peak = 0
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:  # sampled while the hostile ones are open
            peak = max(peak, listener.answers.used)
            await asyncio.sleep(0.01)
        assert 0 < peak <= 4 * MiB + 64 * 1024  # the budget, plus headers past the claims
        # A consumer is still answered, empty while the budget is spent ...
        consumer = RawClient(gateway.kafka_port)
        answered = await asyncio.to_thread(consumer.fetch, "hot", 0, 100)
        assert answered.error_code == 0
        # ... and with records once the connections holding answers are closed (the
        # others got empty answers, which cost nothing, and stay open).
        await until(lambda: listener.answers.used == 0, 15)
        assert _closed(gateway, "send_timeout") >= 1
        answered = await asyncio.to_thread(consumer.fetch, "hot", 0, 100)
        assert answered.responses[0].partitions[0].records
        for sock in [client.sock, consumer.sock, *hostile]:
            sock.close()


async def test_a_quiet_connection_keeps_nothing_of_its_last_answer() -> None:
    """Once answered, a fetch's records and encoded answer are let go, however long
    the connection then stays quiet (it used to keep both until its next request)."""
    async with gateway_with_hot_topic(1) as (gateway, _):
        client = RawClient(gateway.kafka_port)
        assert await asyncio.to_thread(_produced, client, bytes(900_000)) == 0
        consumers = [RawClient(gateway.kafka_port) for _ in range(20)]
        for consumer in consumers:  # opened first: their buffers are not counted below
            assert (await asyncio.to_thread(_versions, consumer)).error_code == 0
        tracemalloc.start()
        try:
            for consumer in consumers:
                fetched = await asyncio.to_thread(consumer.fetch, "hot", 0)
                assert len(fetched.responses[0].partitions[0].records) > 900_000
                del fetched
            await asyncio.sleep(0.1)  # the writers are back waiting for requests
            gc.collect()
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert held < 5 * MiB, held  # 20 answers of 1.8 MB each were kept before
        for c in [client, *consumers]:
            c.close()


async def test_stopped_requests_holding_the_budget_give_way_long_before_their_deadline() -> None:
    # The producer's first request is the large one, waiting its turn for memory: not
    # a whole request within the set-up deadline, which is not what this is about.
    config = {
        "max_queued_request_bytes": MiB,
        "request_receive_timeout_s": 600,
        "connection_setup_timeout_s": 600,
    }
    async with gateway_with_hot_topic(1, **config) as (gateway, _):
        holders = []
        for _ in range(3):  # most of a 1 MiB request each, then nothing
            holder = _raw(gateway.kafka_port)
            holder.sendall(struct.pack(">i", MiB) + bytes(900_000))
            holders.append(holder)
        # Waits while they hold the budget, until they have been idle for a while. They
        # go one after the other: a holder that waited for memory takes in what its
        # kernel buffered once it gets some, and is idle only from then (up to twice
        # EVICT_IDLE_S each, so up to 30 s for three; the request deadline is 600 s).
        producer = RawClient(gateway.kafka_port, timeout=90)
        assert await asyncio.to_thread(_produced, producer, bytes(600_000)) == 0
        assert _closed(gateway, "evicted") >= 1 and _closed(gateway, "receive_timeout") == 0
        for sock in [producer.sock, *holders]:
            sock.close()


async def test_answers_nobody_reads_give_way_to_a_consumer_long_before_their_deadline() -> None:
    config = {"max_queued_response_bytes": 4 * MiB, "response_send_timeout_s": 600}
    async with gateway_with_hot_topic(1, **config) as (gateway, _):
        client = RawClient(gateway.kafka_port)
        for _ in range(8):
            assert await asyncio.to_thread(_produced, client, bytes(900_000)) == 0
        fetch = _encoded(1, 12, **RawClient.fetch_fields("hot", 0, wait_ms=200))
        hostile = [_raw(gateway.kafka_port) for _ in range(12)]
        for sock in hostile:
            sock.sendall(fetch * 40)  # then never read
        listener = gateway.listener
        assert listener is not None
        await until(lambda: listener.answers.used >= 3 * MiB, 10)  # in their hands now
        consumer = RawClient(gateway.kafka_port)
        empty = 0
        while (
            not (await asyncio.to_thread(consumer.fetch, "hot", 0, 200))
            .responses[0]
            .partitions[0]
            .records
        ):
            empty += 1  # the budget is held by answers nobody reads ...
            assert empty < 200, "the consumer never got records"
        # ... until those that took no byte for a while are closed.
        assert _closed(gateway, "evicted") >= 1 and _closed(gateway, "send_timeout") == 0
        for sock in [client.sock, consumer.sock, *hostile]:
            sock.close()


async def test_a_closed_connection_leaves_nothing_behind() -> None:
    """A connection kop closed is gone at once, buffers and all (its close used to
    keep it for the send timeout: 370 closes a second held a gigabyte)."""
    async with gateway_with_hot_topic(1) as (gateway, _):
        others = weakref.WeakSet(_streams())  # of earlier tests, not this gateway's
        for _ in range(20):
            sock = _raw(gateway.kafka_port)
            sock.sendall(struct.pack(">i", 0x7FFFFFF0))  # refused from its prefix
            assert await asyncio.to_thread(closed_by_peer, sock, 5)
            sock.close()
        await until(lambda: _open(gateway) == 0, 5)
        await until(lambda: [s for s in _streams() if s not in others] == [], 5)


def _streams() -> list[RequestStream]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, RequestStream)]
