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
        assert PRODUCERS["kafka-python"](gateway.bootstrap, topic, first, "zstd") == list(
            range(120)
        )
        time.sleep(1.5)  # lets some checkpoints reach the index topic, not necessarily all
        gateway.kill9()
        gateway.start()
        second = sample_records(30, base_ts=1_800_000_000_000)
        assert PRODUCERS["aiokafka"](gateway.bootstrap, topic, second, None) == list(
            range(120, 150)
        )
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
        stop = threading.Event()

        def on_delivery(err, msg):  # type: ignore[no-untyped-def]
            if err is None:
                acked[msg.offset()] = msg.value()
            else:
                failed.append(err)

        def produce() -> None:
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
                time.sleep(0.001)
            producer.flush(60)

        thread = threading.Thread(target=produce)
        thread.start()
        while len(acked) < 300:
            time.sleep(0.05)
        gateway.kill9()  # mid-stream: requests are in flight
        time.sleep(0.5)
        gateway.start()
        before = len(acked)
        deadline = time.monotonic() + 60
        while len(acked) < before + 300 and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        thread.join(90)
        assert len(acked) >= before + 300, "production did not resume after the restart"
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
