"""kill -9 of kop at any moment: every acknowledged record is still there at the
offset it was acknowledged with, and new records continue densely."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from tests.integration.admin import create_topic
from tests.integration.clients import PRODUCERS, Rec, cf_consume, sample_records
from tests.integration.conftest import KopProcess
from tests.integration.observe import partition_state, wait_for_partition


def _small_index(tmp_path: Path) -> KopProcess:
    # Frequent checkpoints and no tail buffer: restarts resume from the index and
    # fetches read history from Pulsar.
    gateway = KopProcess(tmp_path, KOP_CHECKPOINT_INTERVAL="25", KOP_TAIL_BUFFER_BYTES="0")
    gateway.start()
    return gateway


def test_kill9_between_writes_keeps_offsets(pulsar: str, tmp_path: Path, topic: str) -> None:
    gateway = _small_index(tmp_path)
    try:
        create_topic(gateway.bootstrap, topic, entry_format="pulsar")
        first = sample_records(120)
        # In six produce requests: kop checkpoints only where a Pulsar entry starts,
        # and one request's records (sent together) become one batched Pulsar entry.
        # One 120-record entry would leave a single checkpoint, at offset 0, and a
        # restart resuming from it would re-read the whole partition.
        offsets: list[int] = []
        for chunk in range(0, 120, 20):
            part = first[chunk : chunk + 20]
            offsets += PRODUCERS["kafka-python"](gateway.bootstrap, topic, part, "zstd")
        assert offsets == list(range(120))
        # Kill once the index covering all 120 records is persisted (kop flushes it
        # every second), so the restart resumes from it instead of rescanning.
        wait_for_partition(
            gateway,
            topic,
            lambda s: s.get("high_watermark") == 120 and s.get("persisted_offset", 0) >= 120,
            "offset index persisted up to offset 120",
        )
        gateway.kill9()
        gateway.start()
        second = sample_records(30, base_ts=1_750_000_000_000)
        assert PRODUCERS["aiokafka"](gateway.bootstrap, topic, second, None) == list(
            range(120, 150)
        )
        # The restarted kop resumed counting from a persisted checkpoint, not by
        # rescanning the partition from its start.
        state = partition_state(gateway, topic)
        assert state["resumed_from_offset"] > 0 and state["high_watermark"] == 150, state
        got = cf_consume(gateway.bootstrap, topic, 150)
        assert [r.offset for r in got] == list(range(150))
        assert [(r.key, r.value, r.headers) for r in got] == [
            (r.key, r.value, r.headers) for r in first + second
        ]
    finally:
        gateway.stop()


def test_kill9_during_production_loses_nothing_acknowledged(
    pulsar: str, tmp_path: Path, topic: str
) -> None:
    gateway = _small_index(tmp_path)
    try:
        create_topic(gateway.bootstrap, topic, entry_format="kafka")
        acked: dict[int, bytes] = {}
        failed: list[object] = []
        crashed: list[BaseException] = []
        stop = threading.Event()

        def on_delivery(err, msg):  # type: ignore[no-untyped-def]
            if err is None:
                acked[msg.offset()] = msg.value()
            else:
                failed.append(err)

        def produce() -> None:
            try:
                producer = Producer(
                    {
                        "bootstrap.servers": gateway.bootstrap,
                        "linger.ms": 2,
                        "acks": "all",
                        "message.timeout.ms": 60000,
                    }
                )
                i = 0
                while not stop.is_set():
                    producer.produce(
                        topic, value=f"r{i}".encode(), partition=0, on_delivery=on_delivery
                    )
                    producer.poll(0)
                    i += 1
                    time.sleep(0.001)  # pacing: about a thousand records a second
                assert producer.flush(60) == 0, "records still undelivered after 60s"
            except BaseException as exc:  # reported by the test thread
                crashed.append(exc)

        def wait_for_acks(count: int, timeout: float, what: str) -> None:
            deadline = time.monotonic() + timeout
            while len(acked) < count and not crashed and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not crashed, f"the producer thread failed: {crashed!r}"
            assert len(acked) >= count, (
                f"{what}: {len(acked)} of {count} records acknowledged in {timeout}s, "
                f"failed deliveries: {failed[:5]!r}\n{gateway.log_text()[-3000:]}"
            )

        thread = threading.Thread(target=produce)
        thread.start()
        try:
            wait_for_acks(300, 60, "production did not start")
            gateway.kill9()  # mid-stream: requests are in flight
            time.sleep(0.5)  # down for a moment: the producer's reconnects are refused
            gateway.start()
            before = len(acked)
            wait_for_acks(before + 300, 60, "production did not resume after the restart")
        finally:
            stop.set()
            thread.join(90)
        assert not thread.is_alive(), "the producer did not finish flushing in 90s"
        assert not crashed, f"the producer thread failed: {crashed!r}"
        # message.timeout.ms=60000: librdkafka retries across the kill and the restart,
        # so no delivery may fail.
        assert failed == [], f"{len(failed)} deliveries failed: {failed[:10]!r}"
        end = max(acked) + 1
        got = cf_consume(gateway.bootstrap, topic, end)
        assert [r.offset for r in got] == list(range(end))
        by_offset = {r.offset: r.value for r in got}
        assert all(by_offset[o] == v for o, v in acked.items())
    finally:
        gateway.stop()


def test_sigterm_finishes_in_flight_and_exits_cleanly(fresh_kop: KopProcess, topic: str) -> None:
    recs = [Rec(None, b"x" * 100, (), 1_700_000_000_000 + i) for i in range(50)]
    assert PRODUCERS["confluent-kafka"](fresh_kop.bootstrap, topic, recs, None) == list(range(50))
    assert fresh_kop.stop() == 0
    assert "Traceback" not in fresh_kop.log_text()
