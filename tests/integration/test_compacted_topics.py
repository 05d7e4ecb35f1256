"""Compacted topics (cleanup.policy=compact) on a real Pulsar: Pulsar compacts, kop
serves Kafka's compacted log, and a Pulsar reader with `readCompacted` sees the
same table.

How the test makes retention delete the live ledgers on demand (see
test_retention.py for what `unload` and `truncate` do): once kop's compaction
cycle has noted every survivor (`compaction_noted_offset` in kop's `/v1/topics`
reached the high watermark: the survivors persisted, kop's pin moved), the
partition is unloaded (its ledger closed) and truncated (closed ledgers deleted).
Only Pulsar's compacted ledger then holds the old records.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from bench.java_side import pulsar_lib
from conformance.clients.raw import RawClient
from kop.protocol.records import iter_records, read_header
from tests.integration.admin import create_topic
from tests.integration.conftest import PULSAR_URL, KopProcess
from tests.integration.observe import ledgers, truncate, unload, wait_for_partition

# Written in this order: every key's last write wins, and `k3` ends deleted.
WRITES: list[tuple[bytes, bytes | None]] = [
    *[(f"k{i}".encode(), f"old-{i}".encode()) for i in range(6)],
    (b"k1", b"new-1"),
    (b"k3", None),
    (b"k4", b"new-4"),
    *[(f"k{i}".encode(), f"later-{i}".encode()) for i in (0, 5)],
]
TABLE = {b"k0": b"later-0", b"k1": b"new-1", b"k2": b"old-2", b"k4": b"new-4", b"k5": b"later-5"}


@pytest.fixture
def compacting_kop(pulsar: str, tmp_path: Path) -> Any:
    gateway = KopProcess(tmp_path, KOP_COMPACTION_INTERVAL_S="1", KOP_RETENTION_CHECK_S="1")
    gateway.start()
    yield gateway
    gateway.stop()


def _produce(bootstrap: str, topic: str, writes: list[tuple[bytes, bytes | None]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    errors: list[Any] = []
    for key, value in writes:
        producer.produce(topic, key=key, value=value, on_delivery=lambda e, _m: errors.append(e))
    producer.flush(30)
    assert errors and not any(errors), errors


def _read_all(bootstrap: str, topic: str, start: int = 0) -> list[tuple[int, bytes, Any]]:
    """Every record from `start` to the end: (offset, key, value)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
         "enable.auto.commit": False, "auto.offset.reset": "error"}
    )  # fmt: skip
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        consumer.assign([TopicPartition(topic, 0, start)])
        out: list[tuple[int, bytes, Any]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                if consumer.position([TopicPartition(topic, 0)])[0].offset >= high:
                    return out
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out.append((msg.offset(), msg.key(), msg.value()))
            if msg.offset() + 1 >= high:
                return out
        raise AssertionError(f"read {out} of {topic} up to {high} in 30 s")
    finally:
        consumer.close()


def test_compacted_topic_after_retention_is_kafkas_table(
    compacting_kop: KopProcess, topic: str
) -> None:
    boot = compacting_kop.bootstrap
    create_topic(boot, topic, configs={"cleanup.policy": "compact"})
    _produce(boot, topic, WRITES[:6])
    unload(topic)  # a ledger boundary inside the data
    _produce(boot, topic, WRITES[6:])
    wait_for_partition(
        compacting_kop, topic, lambda s: s.get("high_watermark") == len(WRITES), "all counted"
    )
    before = _read_all(boot, topic)
    assert [(k, v) for _o, k, v in before] == WRITES  # the live log: every record

    wait_for_partition(
        compacting_kop, topic, lambda s: s.get("compaction_noted_offset") == len(WRITES), "noted"
    )
    unload(topic)
    truncate(topic)  # retention, on demand: only the compacted ledger keeps the old records
    assert ledgers(topic)[-1][1] == 0 and len(ledgers(topic)) == 1

    after = _wait_for_table(boot, topic)
    offsets = {k: o for o, k, _v in after}
    written_at = {k: o for o, (k, _v) in enumerate(WRITES)}
    assert {k: v for _o, k, v in after} == TABLE
    assert offsets == {k: written_at[k] for k in TABLE}  # original offsets

    # A fetch from an offset compaction removed gets the next record.
    assert _read_all(boot, topic, start=1)[0][0] == written_at[b"k2"]

    # The official Java client's reader with readCompacted sees the same table.
    assert _java_compacted_table(f"persistent://public/default/{topic}-partition-0") == TABLE


def test_a_second_cleaning_serves_every_survivor_from_any_offset(
    compacting_kop: KopProcess, topic: str
) -> None:
    """Two rounds of write, compact, retention (conformance's compaction/after-cleaning
    stalled once at the last survivor: the second cycle never noted it), the second
    ending in a key and its tombstone, which compaction removes: a read from each
    surviving offset gets it first, and every read reaches the high watermark across
    the trailing offsets nothing is left of."""
    boot = compacting_kop.bootstrap
    create_topic(boot, topic, configs={"cleanup.policy": "compact"})
    log: list[tuple[bytes, bytes | None]] = []
    last_round = [[(b"k9", b"last"), (b"k8", b"gone")], [(b"k8", None)]]  # an entry each
    for round_ in ([WRITES], last_round):
        for writes in round_:
            _produce(boot, topic, writes)
            log += writes
        _cleaned(compacting_kop, topic, len(log))
    latest = {k: o for o, (k, _v) in enumerate(log)}
    survivors = sorted(o for k, o in latest.items() if log[o][1] is not None)
    for offset in survivors:
        first = _wire_read(boot, topic, offset)[0]
        assert first == (offset, *log[offset]), (offset, first)
    assert [o for o, _k, _v in _wire_read(boot, topic, 0)] == survivors
    assert _wire_read(boot, topic, len(log) - 2) == []  # reaches the end all the same


def _wire_read(bootstrap: str, topic: str, start: int) -> list[tuple[int, bytes, Any]]:
    """Fetches from `start` as a Java consumer does (the next fetch after each
    batch's last offset, records below the fetch offset dropped) until the high
    watermark, failing if a fetch brings no progress. (librdkafka moves its fetch
    offset the same way, but its position() is the last message + 1: across
    trailing offsets compaction emptied it never reports the high watermark.)"""
    client = RawClient.at(bootstrap)
    out: list[tuple[int, bytes, Any]] = []
    at = start
    try:
        while True:
            part = client.fetch(topic, at).responses[0].partitions[0]
            assert part.error_code == 0, part.error_code
            if at >= part.high_watermark:
                return out
            raw, pos = bytes(part.records or b""), 0
            assert raw, f"no progress at {at} below the high watermark {part.high_watermark}"
            while pos < len(raw):
                head = read_header(raw, pos)
                batch = iter_records(raw[pos : pos + head.length])
                out += [(r.offset, r.key, r.value) for r in batch if r.offset >= at]
                at = head.base_offset + head.last_offset_delta + 1
                pos += head.length
    finally:
        client.close()


def _cleaned(gateway: KopProcess, topic: str, written: int) -> None:
    """Once kop's compaction cycle noted the `written` records (survivors persisted,
    pin moved), retention on demand, until kop saw that no live ledger is left."""
    wait_for_partition(gateway, topic, lambda s: s.get("high_watermark") == written, "counted")
    wait_for_partition(
        gateway, topic, lambda s: s.get("compaction_noted_offset") == written, "noted", 60
    )
    unload(topic)
    truncate(topic)
    wait_for_partition(
        gateway, topic, lambda s: s.get("data_start_offset") == written, "retention seen"
    )


def _java_compacted_table(partition: str) -> dict[bytes, bytes]:
    lib = pulsar_lib()
    assert lib is not None, "the Pulsar distribution (tools/pulsar.py fetch) has no client jars"
    source = Path(__file__).parent / "java" / "CompactedTable.java"
    run = subprocess.run(
        ["java", "-cp", f"{lib}/*", str(source), PULSAR_URL, partition],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = run.stdout.splitlines()
    assert run.returncode == 0 and "END" in lines, run.stdout[-3000:] + run.stderr[-3000:]
    table: dict[bytes, bytes] = {}
    for line in lines:
        if not line.startswith("ROW "):
            continue  # the client's own logging
        _row, key, value = line.split(" ")
        assert value != "-", f"a tombstone in the compacted view: {line}"
        table[bytes.fromhex(key)] = bytes.fromhex(value)
    return table


def _wait_for_table(bootstrap: str, topic: str) -> list[tuple[int, bytes, Any]]:
    """What kop serves once its retention check saw the deleted ledgers."""
    deadline = time.monotonic() + 30
    while True:
        got = _read_all(bootstrap, topic)
        if len(got) == len(TABLE) or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def test_keyless_record_on_a_compacted_topic_is_refused(kop: KopProcess, topic: str) -> None:
    create_topic(kop.bootstrap, topic, configs={"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": kop.bootstrap, "retries": 0})
    errors: list[Any] = []
    producer.produce(topic, value=b"no key", on_delivery=lambda e, _m: errors.append(e))
    producer.flush(30)
    assert errors and errors[0] is not None
    assert errors[0].name() == "INVALID_RECORD", errors[0]


def test_compaction_refuses_the_kafka_entry_format(kop: KopProcess, topic: str) -> None:
    with pytest.raises(Exception, match="pulsar entry format"):
        create_topic(
            kop.bootstrap, topic, entry_format="kafka", configs={"cleanup.policy": "compact"}
        )
