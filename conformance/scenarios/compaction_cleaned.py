"""Compacted topics after cleaning: what a consumer reads once compaction has removed
records. Each target is made to clean on demand (`Target.force_compaction`): Kafka's
cleaner runs by itself on topics configured to be cleaned quickly; on kop, Pulsar's
retention deletes the live ledgers once kop noted the survivors (D10).

Kafka never cleans the active segment, so each round of writes ends with a record of
its own key stamped a second later: with segment.ms=100 it rolls the segment and is
the only record left uncleaned. Observations are normalized to what holds once
cleaning is done (the table of latest values at their offsets, whether there are
gaps, where a read from a removed offset starts), never a raw list that depends on
how far a broker's cleaner has got."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from conformance.model import Ctx, Observation, scenario
from conformance.setup import create_topic

CF = ("confluent-kafka",)
Write = tuple[bytes, bytes | None]
Read = list[tuple[int, bytes, bytes | None]]

# Kafka's cleaner acts within seconds on what these configs make cleanable (the same
# configs as bench.compacted's cleaned topic); kop accepts them (segment.*,
# min.cleanable.dirty.ratio have no effect, delete.retention.ms sets Pulsar's retention).
QUICK_CLEANER = {
    "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100",
}  # fmt: skip
CLEAN_TIMEOUT_S = 120.0  # Kafka's cleaner: two passes (tombstones) a backoff apart

# offset: key value; survivors marked *
WRITES: list[Write] = [
    (b"a", b"a1"),  # 0
    (b"b", b"b1"),  # 1
    (b"c", b"c1"),  # 2 *
    (b"a", b"a2"),  # 3
    (b"b", None),  # 4 tombstone: b is deleted
    (b"d", b"d1"),  # 5
    (b"d", None),  # 6 tombstone, then d written again
    (b"e", b"e1"),  # 7 *
    (b"a", b"a3"),  # 8 *
    (b"d", b"d2"),  # 9 *
]
# 10, 11 *: each stamped a second after the one before, so it rolls Kafka's active
# segment (segment.ms=100) and leaves every earlier record cleanable.
ROLLS: list[Write] = [(b"y", b"roll-1"), (b"z", b"roll-2")]


def produce(bootstrap: str, topic: str, writes: list[Write], ts_ms: int) -> list[Any]:
    """Each write's offset (or error name), in order, all stamped `ts_ms`."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                         "enable.idempotence": True})  # fmt: skip
    out: list[Any] = []

    def done(err: Any, msg: Any) -> None:
        out.append(err.name() if err is not None else msg.offset())

    for key, value in writes:
        producer.produce(topic, key=key, value=value, timestamp=ts_ms, on_delivery=done)
    producer.flush(30)
    return out


def _consumer(bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                     "enable.auto.commit": False, "auto.offset.reset": "error"})  # fmt: skip


def watermarks(bootstrap: str, topic: str) -> list[int]:
    """ListOffsets earliest and latest of partition 0."""
    consumer = _consumer(bootstrap)
    try:
        return list(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30))
    finally:
        consumer.close()


def read(bootstrap: str, topic: str, start: int, timeout_s: float = 30) -> Read | str:
    """Every record from `start` up to the high watermark, or the error a read from
    `start` gets (e.g. an offset below the log start)."""
    consumer = _consumer(bootstrap)
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        out: Read = []
        if start == high:
            return out
        consumer.assign([TopicPartition(topic, 0, start)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                if consumer.position([TopicPartition(topic, 0)])[0].offset >= high:
                    return out
                continue
            if msg.error():
                return str(msg.error().name())
            out.append((msg.offset(), msg.key(), msg.value()))
            if msg.offset() + 1 >= high:
                return out
        raise TimeoutError(f"read {len(out)} records from {start}, not up to {high}")
    finally:
        consumer.close()


def wait_for(what: str, check: Callable[[], bool], timeout_s: float = CLEAN_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not {what} within {timeout_s:.0f} s")
        time.sleep(0.5)


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode()


def compacted(got: Read | str) -> bool:
    """What one cleaner pass leaves: every key once (tombstones may still be there)."""
    if isinstance(got, str):
        return False
    keys = [k for _o, k, _v in got]
    return len(keys) == len(set(keys))


def cleaned(got: Read | str) -> bool:
    """What a cleaned log shows past delete.retention.ms: every key once, no tombstone."""
    return compacted(got) and not isinstance(got, str) and all(v is not None for *_, v in got)


def clean(ctx: Ctx, topic: str, until: Callable[[Read | str], bool]) -> Read:
    """Compaction made to act (`force_compaction`), then a read from 0 until `until`."""
    ctx.target.force_compaction(topic)
    got: Read | str = []

    def done() -> bool:
        nonlocal got
        got = read(ctx.bootstrap, topic, 0)
        return until(got)

    wait_for(f"{until.__name__}", done)
    assert not isinstance(got, str)
    return got


@scenario("compaction/after-cleaning", CF)
def after_cleaning(ctx: Ctx, _client: object) -> Observation:
    """Keyed writes with overwrites and tombstones, cleaned: read from offset 0, each
    key's latest value at the offset it was written at, deleted keys absent, gaps
    where records were removed, a read from a removed offset starting at the next
    record, ListOffsets earliest still 0."""
    topic = ctx.name("compacted-cleaned")
    create_topic(ctx.bootstrap, topic, configs={"cleanup.policy": "compact", **QUICK_CLEANER})
    now = int(time.time() * 1000)
    written = produce(ctx.bootstrap, topic, WRITES, now)
    # Kafka's first pass keeps a tombstone and sets its delete horizon; only a later
    # pass, which needs new dirty data, removes it: hence a second rolling record.
    written += produce(ctx.bootstrap, topic, [ROLLS[0]], now + 1000)
    clean(ctx, topic, compacted)
    written += produce(ctx.bootstrap, topic, [ROLLS[1]], now + 2000)
    got = clean(ctx, topic, cleaned)
    log = [*WRITES, *ROLLS]
    offsets = [o for o, _k, _v in got]
    return {
        "writes": written,
        "watermarks": watermarks(ctx.bootstrap, topic),
        "table": {_text(k): [o, _text(v)] for o, k, v in got},
        "every record served is the one written at its offset": all(
            o < len(log) and log[o] == (k, v) for o, k, v in got
        ),
        "offsets have gaps": offsets != list(range(offsets[0], offsets[0] + len(offsets))),
        "first offset read from 0": offsets[0],
        "first offset read from 3 (removed)": _first(read(ctx.bootstrap, topic, 3)),
        "first offset read from 4 (a removed tombstone)": _first(read(ctx.bootstrap, topic, 4)),
    }


def _first(got: Read | str) -> int | str | None:
    if isinstance(got, str):
        return got
    return got[0][0] if got else None


RETENTION_MS = 10_000  # compact,delete: long enough to read a new record before it expires


@scenario("compaction/compact-delete", CF)
def compact_delete(ctx: Ctx, _client: object) -> Observation:
    """cleanup.policy=compact,delete with a short retention.ms: once it has passed,
    every record is gone, each key's latest value too (the log start reaches the
    high watermark); a record written after it is served from its own offset."""
    topic = ctx.name("compact-delete")
    configs = {"cleanup.policy": "compact,delete", "retention.ms": str(RETENTION_MS)}
    create_topic(ctx.bootstrap, topic, configs={**configs, **QUICK_CLEANER})
    written = produce(ctx.bootstrap, topic, WRITES[:4], int(time.time() * 1000))
    ctx.target.force_compaction(topic)

    def expired() -> bool:
        low, high = watermarks(ctx.bootstrap, topic)
        return low == high

    wait_for("expired", expired, RETENTION_MS / 1000 + CLEAN_TIMEOUT_S)
    expired_at = watermarks(ctx.bootstrap, topic)
    later = produce(ctx.bootstrap, topic, [(b"e", b"e1")], int(time.time() * 1000))
    return {
        "writes": written,
        "watermarks after retention.ms": expired_at,
        "write after": later,
        "watermarks": watermarks(ctx.bootstrap, topic),
        "read from the log start": [
            [o, _text(k), _text(v)] for o, k, v in _records(read(ctx.bootstrap, topic, later[0]))
        ],
        "read from 0": _first(read(ctx.bootstrap, topic, 0)),
    }


def _records(got: Read | str) -> Read:
    if isinstance(got, str):
        raise AssertionError(f"read failed: {got}")
    return got
