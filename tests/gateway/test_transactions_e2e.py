"""Transactions with an unmodified client (librdkafka's transactional producer),
over the in-memory storage, in both entry formats: a committed transaction is read
by a `read_committed` consumer, an aborted one is not, and a second producer with
the same transactional id fences the first (its next send fails fatally, and what
it left open is aborted)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kop.entries.formats import EntryFormat
from tests.gateway.memory_gateway import gateway_with_hot_topic


def _producer(port: int, txn_id: str) -> Producer:
    p = Producer({
        "bootstrap.servers": f"127.0.0.1:{port}", "transactional.id": txn_id,
        "transaction.timeout.ms": 60_000, "linger.ms": 5,
    })  # fmt: skip
    p.init_transactions(30)
    return p


def _send(p: Producer, values: list[bytes], commit: bool) -> None:
    p.begin_transaction()
    for i, v in enumerate(values):
        p.produce("hot", v, partition=i % 2)
    p.flush(30)
    if commit:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)


def _read(port: int, isolation: str) -> list[bytes]:
    """Every record up to the end each partition reports at `isolation`."""
    consumer = Consumer({
        "bootstrap.servers": f"127.0.0.1:{port}", "group.id": f"g-{isolation}",
        "isolation.level": isolation, "enable.auto.commit": False,
    })  # fmt: skip
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition("hot", p), timeout=10)[1]
                for p in (0, 1)}  # fmt: skip
        tps = [TopicPartition("hot", p, 0) for p in (0, 1)]
        consumer.assign(tps)
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while any(consumer.position([TopicPartition("hot", p)])[0].offset < ends[p]
                  for p in (0, 1)):  # fmt: skip
            assert time.monotonic() < deadline, f"{isolation}: stuck after {seen}"
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                seen.append(msg.value())
        return sorted(seen)
    finally:
        consumer.close()


def _scenario(port: int) -> dict[str, Any]:
    p = _producer(port, "t1")
    _send(p, [b"c1", b"c2", b"c3"], commit=True)
    _send(p, [b"a1", b"a2"], commit=False)
    p.begin_transaction()
    p.produce("hot", b"zombie", partition=0)
    p.flush(30)
    second = _producer(port, "t1")  # fences the first; its open transaction is aborted
    _send(second, [b"c4"], commit=True)
    fenced = None
    try:
        p.produce("hot", b"late", partition=1)
        p.flush(10)
        p.commit_transaction(10)
    except KafkaException as exc:
        fenced = exc.args[0]
    return {
        "committed": _read(port, "read_committed"),
        "everything": _read(port, "read_uncommitted"),
        "fenced": fenced,
    }


@pytest.mark.parametrize("fmt", [EntryFormat.PULSAR, EntryFormat.KAFKA])
async def test_commit_abort_and_a_fenced_producer(fmt: EntryFormat) -> None:
    async with gateway_with_hot_topic(2, default_entry_format=fmt.value) as (gateway, _):
        out = await asyncio.to_thread(_scenario, gateway.kafka_port)
    assert out["committed"] == [b"c1", b"c2", b"c3", b"c4"]
    assert out["everything"] == [b"a1", b"a2", b"c1", b"c2", b"c3", b"c4", b"zombie"]
    fenced = out["fenced"]
    assert fenced is not None and fenced.fatal(), fenced


def _committed(port: int, group: str) -> list[int]:
    # read_uncommitted: a read_committed consumer asks for stable offsets (KIP-447)
    # and would wait while a transaction that committed some is open
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": group,
                  "isolation.level": "read_uncommitted"})  # fmt: skip
    try:
        return [tp.offset for tp in c.committed([TopicPartition("hot", p) for p in (0, 1)], 10)]
    finally:
        c.close()


def _offsets_in_transactions(port: int) -> dict[str, Any]:
    """A read-process-write step's offsets: visible to the group only once its
    transaction commits; an aborted one's never."""
    p = _producer(port, "rpw")
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "rpw",
                  "enable.auto.commit": False})  # fmt: skip
    meta = c.consumer_group_metadata()
    out: dict[str, Any] = {}
    p.begin_transaction()
    p.produce("hot", b"out-1", partition=0)
    p.send_offsets_to_transaction([TopicPartition("hot", 0, 5), TopicPartition("hot", 1, 7)],
                                  meta, 30)  # fmt: skip
    out["before commit"] = _committed(port, "rpw")
    p.commit_transaction(30)
    out["after commit"] = _committed(port, "rpw")
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition("hot", 0, 9)], meta, 30)
    p.abort_transaction(30)
    out["after abort"] = _committed(port, "rpw")
    c.close()
    return out


async def test_offsets_sent_to_a_transaction_count_only_when_it_commits() -> None:
    async with gateway_with_hot_topic(2) as (gateway, _):
        out = await asyncio.to_thread(_offsets_in_transactions, gateway.kafka_port)
    assert out == {
        "before commit": [-1001, -1001],
        "after commit": [5, 7],
        "after abort": [5, 7],
    }
