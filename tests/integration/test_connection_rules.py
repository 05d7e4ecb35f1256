"""Connection-level rules: acks=0 gets no answer (yet is written), idle
connections are closed after the configured time."""

from __future__ import annotations

import time
from pathlib import Path

from kop.protocol.records import Record, build_batch
from tests.integration.admin import create_topic
from tests.integration.clients import kp_consume
from tests.integration.conftest import KopProcess
from tests.integration.raw import RawClient


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
    gateway = KopProcess(tmp_path, KOP_IDLE_TIMEOUT_S="1")
    gateway.start()
    try:
        client = RawClient(gateway.port, timeout=10)
        assert client.request(18, 3, client_software_name="raw", client_software_version="1")
        time.sleep(2.5)
        assert client.is_closed_by_peer()
        busy = RawClient(gateway.port, timeout=10)
        for _ in range(4):  # a connection that keeps talking stays open
            time.sleep(0.5)
            assert busy.request(18, 3, client_software_name="raw", client_software_version="1")
        busy.close()
    finally:
        gateway.stop()
