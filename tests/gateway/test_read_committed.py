"""`read_committed` with an unmodified client (librdkafka), over the in-memory
storage, in both entry formats. The log holds what a transactional producer and
its coordinator leave behind (written here straight into the partition log: the
coordinator's APIs come later): an aborted transaction, plain records, a committed
transaction and one still open. A `read_committed` consumer gets the plain and the
committed records only, and stops at the open transaction (the last stable offset,
which ListOffsets reports as the end); a `read_uncommitted` consumer gets every
record; neither is handed a marker."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from kop.entries.formats import EntryFormat
from kop.protocol.control import Marker, marker_batch
from kop.protocol.records import Record, build_batch, read_header
from tests.gateway.memory_gateway import gateway_with_hot_topic

PID, TS = 42, 1_700_000_000_000
TOPIC = "persistent://public/default/hot-partition-0"


def _txn(values: list[bytes], seq: int) -> bytes:
    records = [Record(i, TS + i, None, v) for i, v in enumerate(values)]
    return build_batch(records, producer_id=PID, producer_epoch=0, base_sequence=seq,
                       transactional=True)  # fmt: skip


def _plain(values: list[bytes]) -> bytes:
    return build_batch([Record(i, TS + i, None, v) for i, v in enumerate(values)])


def _marker(commit: bool) -> bytes:
    return marker_batch(Marker(commit, PID, 0, 0), TS)


LOG = [
    _txn([b"aborted-1", b"aborted-2"], 0),  # offsets 0-1
    _plain([b"plain-1"]),  # 2
    _marker(commit=False),  # 3
    _txn([b"committed-1", b"committed-2"], 2),  # 4-5
    _plain([b"plain-2"]),  # 6
    _marker(commit=True),  # 7
    _txn([b"open-1"], 4),  # 8: still open
    _plain([b"plain-3"]),  # 9
]


def _read(port: int, isolation: str, end: int) -> tuple[list[str], int]:
    """Every record delivered until the consumer's position reaches `end` (past the
    markers too), and the end ListOffsets reports at its isolation level."""
    consumer = Consumer({
        "bootstrap.servers": f"127.0.0.1:{port}", "group.id": f"g-{isolation}",
        "isolation.level": isolation, "enable.auto.commit": False,
    })  # fmt: skip
    try:
        tp = TopicPartition("hot", 0, 0)
        consumer.assign([tp])
        seen: list[str] = []
        deadline = time.monotonic() + 30
        while consumer.position([tp])[0].offset < end:
            assert time.monotonic() < deadline, f"{isolation}: stuck at {seen}"
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                seen.append(msg.value().decode())
        _, high = consumer.get_watermark_offsets(TopicPartition("hot", 0), timeout=10)
        return seen, high
    finally:
        consumer.close()


@pytest.mark.parametrize("fmt", [EntryFormat.PULSAR, EntryFormat.KAFKA])
async def test_read_committed_gets_the_committed_records_only(fmt: EntryFormat) -> None:
    config: dict[str, Any] = {"default_entry_format": fmt.value}
    async with gateway_with_hot_topic(1, **config) as (gateway, _):
        plog = await gateway.logs.partition(TOPIC)
        for batch in LOG:
            done = await plog.begin_append([(read_header(batch), batch)], fmt)
            await done
        assert (plog.high_watermark, plog.last_stable) == (10, 8)
        committed = await asyncio.to_thread(_read, gateway.kafka_port, "read_committed", 8)
        everything = await asyncio.to_thread(_read, gateway.kafka_port, "read_uncommitted", 10)
    assert committed == (["plain-1", "committed-1", "committed-2", "plain-2"], 8)
    assert everything == (
        ["aborted-1", "aborted-2", "plain-1", "committed-1", "committed-2", "plain-2",
         "open-1", "plain-3"],
        10,
    )  # fmt: skip
