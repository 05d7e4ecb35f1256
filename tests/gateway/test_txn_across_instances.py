"""A transaction whose coordinator is one kop instance and whose partition another
serves, over one in-memory Pulsar: the coordinator's markers reach the partition's
owner as a WriteTxnMarkers request (as Kafka's coordinators reach partition
leaders), so a commit becomes readable and an abort does not, there too."""

from __future__ import annotations

import asyncio
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import until
from tests.gateway.test_groups_across_instances import (
    PARTITION,
    group_coordinated_by,
    two_instances,
)


async def split_roles(txns_at: Gateway, groups_at: Gateway) -> tuple[str, str]:
    """Once both instances loaded their transaction state: a transactional id that
    `txns_at` coordinates and a group that `groups_at` coordinates."""
    for gateway in (txns_at, groups_at):
        await until(lambda g=gateway: g.txns.partitions.all_loaded, 5)  # type: ignore[misc]
    return txn_coordinated_by(txns_at), group_coordinated_by(groups_at)


def txn_coordinated_by(gateway: Gateway) -> str:
    txns = gateway.txns
    assert txns is not None
    return next(t for t in (f"txn-{i}" for i in range(200))
                if txns.partitions.coordinates(txns.partition_of(t)))  # fmt: skip


def _run(port: int, txn_id: str) -> list[bytes]:
    p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "transactional.id": txn_id})
    p.init_transactions(30)
    for value, commit in ((b"committed", True), (b"aborted", False)):
        p.begin_transaction()
        p.produce("hot", value, partition=0)
        assert p.flush(30) == 0
        p.commit_transaction(30) if commit else p.abort_transaction(30)
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "check",
                  "isolation.level": "read_committed", "enable.auto.commit": False})  # fmt: skip
    try:
        _, end = c.get_watermark_offsets(TopicPartition("hot", 0), timeout=10)
        c.assign([TopicPartition("hot", 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while c.position([TopicPartition("hot", 0)])[0].offset < end:
            assert time.monotonic() < deadline, got
            msg = c.poll(0.1)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        return got
    finally:
        c.close()


async def test_markers_reach_a_partition_another_instance_serves() -> None:
    async with two_instances() as (owner, other, _backend):
        assert other.txns is not None
        await until(lambda: other.txns.partitions.all_loaded, 5)  # type: ignore[union-attr]
        txn_id = txn_coordinated_by(other)
        got = await asyncio.to_thread(_run, other.kafka_port, txn_id)
        assert owner.logs is not None
        plog = owner.logs.owned()[PARTITION]
    assert got == [b"committed"]
    assert (plog.high_watermark, plog.last_stable) == (4, 4)  # two records, two markers
