"""Long-poll fetches wake on new data instead of busy polling; ops endpoints answer."""

from __future__ import annotations

import threading
import time
import urllib.request

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic

from conformance.clients.raw import RawClient
from tests.integration.admin import create_topic
from tests.integration.clients import PRODUCERS, Rec
from tests.integration.conftest import KopProcess


def test_waiting_fetch_is_woken_by_a_produce(kop: KopProcess, topic: str) -> None:
    create_topic(kop.bootstrap, topic)
    client = RawClient(kop.port)
    produce_sent: list[float] = []  # time.monotonic() as the produce starts
    produce_acked: list[float] = []  # ... and once the producer has its acknowledgement
    produce_errors: list[BaseException] = []

    def produce() -> None:
        produce_sent.append(time.monotonic())
        try:
            PRODUCERS["kafka-python"](
                kop.bootstrap, topic, [Rec(None, b"wake", (), 1_700_000_000_000)], None
            )
        except BaseException as exc:  # reported by the test thread below
            produce_errors.append(exc)
        produce_acked.append(time.monotonic())

    # Open the partition first (on a loaded machine that may take longer than a
    # request waits for it), so the long poll below waits for data, not for opening.
    deadline = time.monotonic() + 60
    while client.fetch(topic, 0).responses[0].partitions[0].error_code != ErrorCode.none:
        assert time.monotonic() < deadline, "the partition did not open in 60 s"
        time.sleep(0.1)
    timer = threading.Timer(0.5, produce)
    started = time.monotonic()
    timer.start()
    resp = client.fetch(topic, 0, wait_ms=20_000)
    returned = time.monotonic()
    timer.join(60)
    client.close()
    assert not produce_errors, f"the waking produce failed: {produce_errors!r}"
    assert produce_acked, "the waking produce did not finish"
    part = resp.responses[0].partitions[0]
    assert resp.session_id == 0 and part.error_code == ErrorCode.none
    assert part.high_watermark == 1 and part.records and b"wake" in part.records
    # Woken by the produce, not by the 20 s max_wait running out (which would also
    # answer with the record): the answer came after the produce was sent and soon
    # after it was acknowledged. (The fetch may be answered before the producer
    # has its acknowledgement: the record is readable once written.)
    took = f"fetch answered {returned - started:.1f}s into its 20s wait"
    assert returned >= produce_sent[0], f"{took}, before the produce was sent"
    assert returned - produce_acked[0] < 10, (
        f"{took}, {returned - produce_acked[0]:.1f}s after the produce was acknowledged"
    )


def test_fetch_with_nothing_new_returns_empty_after_wait(kop: KopProcess, topic: str) -> None:
    create_topic(kop.bootstrap, topic)
    client = RawClient(kop.port)
    resp = client.fetch(topic, 0, wait_ms=200)
    part = resp.responses[0].partitions[0]
    assert part.error_code == ErrorCode.none and part.high_watermark == 0 and not part.records
    client.close()


def test_fetch_beyond_the_end_is_offset_out_of_range(kop: KopProcess, topic: str) -> None:
    create_topic(kop.bootstrap, topic)
    client = RawClient(kop.port)
    resp = client.fetch(topic, 5, wait_ms=0)
    assert resp.responses[0].partitions[0].error_code == ErrorCode.offset_out_of_range
    client.close()


def test_health_ready_and_metrics(kop: KopProcess, topic: str) -> None:
    PRODUCERS["kafka-python"](kop.bootstrap, topic, [Rec(None, b"m", (), 1_700_000_000_000)], None)
    base = f"http://127.0.0.1:{kop.admin_port}"
    with urllib.request.urlopen(f"{base}/healthz") as resp:
        assert resp.status == 200
    with urllib.request.urlopen(f"{base}/readyz") as resp:
        assert resp.status == 200
    deadline = time.monotonic() + 10
    while True:
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as resp:
            text = resp.read().decode()
        if 'api="produce"' in text or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert 'kop_requests_total{api="produce",outcome="ok"}' in text
    assert "kop_connections" in text


def test_a_fetch_asking_for_2_gib_is_answered_within_the_cap(limited_kop: KopProcess) -> None:
    """fetch_max_bytes_cap=1 MiB; 3.2 MB stored in two partitions; a Fetch with
    max_bytes and partition_max_bytes of 2^31-1 gets at most the cap plus one batch
    (KIP-74; a batch is at most max.message.bytes), where before kop read and sent
    everything stored."""
    topic, value = "big", 200 * 1024
    create_topic(limited_kop.bootstrap, topic, 2)
    recs = [
        Rec(None, bytes([i]) * value, (), 1_700_000_000_000, partition=i % 2) for i in range(16)
    ]
    PRODUCERS["confluent-kafka"](limited_kop.bootstrap, topic, recs, None)
    parts = tuple(
        FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=2**31 - 1) for p in (0, 1)
    )
    fields = {**RawClient.fetch_fields(topic, 0), "max_bytes": 2**31 - 1}
    fields["topics"] = (FetchTopic(topic=topic, partitions=parts),)
    client = RawClient(limited_kop.port)
    try:
        deadline = time.monotonic() + 60  # until both partitions opened
        while True:
            resp = client.request(1, 12, **fields)
            codes = [p.error_code for p in resp.responses[0].partitions]
            if codes == [ErrorCode.none, ErrorCode.none]:
                break
            assert time.monotonic() < deadline, f"partitions not open in 60 s: {codes}"
            time.sleep(0.2)
    finally:
        client.close()
    sent = sum(len(p.records or b"") for p in resp.responses[0].partitions)
    assert value < sent <= (1 << 20) + 1_048_588 < len(recs) * value, sent
