"""Connection-level rules: acks=0 gets no answer (yet is written), idle
connections are closed after the configured time."""

from __future__ import annotations

import time
from pathlib import Path

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from tests.integration.admin import create_topic
from tests.integration.clients import kp_consume
from tests.integration.conftest import KopProcess


def test_acks_zero_is_written_without_a_response(kop: KopProcess, topic: str) -> None:
    create_topic(kop.bootstrap, topic)
    client = RawClient(kop.port)
    batch = build_batch([Record(0, 1_700_000_000_000, None, b"fire-and-forget")])
    _, payload = client.encode(0, 9, **client.produce_fields(topic, batch, acks=0))
    client.send_frame(payload)
    # The next response on the wire must be the ApiVersions one: acks=0 got none.
    versions = client.request(18, 3, client_software_name="raw", client_software_version="1")
    assert versions.error_code == 0
    client.close()
    got = kp_consume(kop.bootstrap, topic, 1)
    assert [(r.offset, r.value) for r in got] == [(0, b"fire-and-forget")]


def test_idle_connection_is_closed(pulsar: str, tmp_path: Path) -> None:
    idle_timeout = 1.0
    gateway = KopProcess(tmp_path, KOP_IDLE_TIMEOUT_S=str(idle_timeout))
    gateway.start()
    try:
        client = RawClient(gateway.port, timeout=10)
        assert client.request(18, 3, client_software_name="raw", client_software_version="1")
        answered = time.monotonic()
        assert client.wait_closed_by_peer(idle_timeout + 9), "idle connection was not closed"
        idle_for = time.monotonic() - answered
        client.close()
        # kop's clock starts a little before the answer reaches us: allow some slack
        # below the timeout, and a generous margin above it.
        assert idle_timeout - 0.2 <= idle_for <= idle_timeout + 4, (
            f"closed after {idle_for:.2f}s idle, the idle timeout is {idle_timeout}s"
        )

        # A connection that keeps talking stays open: requests spaced over more than
        # the idle timeout, each restarting it.
        busy = RawClient(gateway.port, timeout=10)
        opened = time.monotonic()
        for _ in range(4):
            time.sleep(0.5)  # spacing between requests, not waiting for anything
            assert busy.request(18, 3, client_software_name="raw", client_software_version="1")
        assert time.monotonic() - opened > 1.5 * idle_timeout
        assert not busy.wait_closed_by_peer(0.2), "a busy connection was closed"
        busy.close()
    finally:
        gateway.stop()
