"""KIP-890's verification where the transactional id is coordinated by another
instance than the one given the write: that instance asks the coordinator
(AddPartitionsToTxn verify-only, kop.txn.peers), as a Kafka partition leader does.
Unverified, a transactional batch for a partition its transaction never added opened
a transaction no marker would ever close (the partition's last stable offset stuck
for good), and such a TxnOffsetCommit left offsets pending for good."""

from __future__ import annotations

import asyncio
import datetime
import importlib
import time
from typing import Any

from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic

from conformance.clients.raw import RawClient
from kop.protocol.errors import ErrorCode
from kop.protocol.records import Record, build_batch
from kop.wiring.app import Gateway
from tests.gateway.test_groups_across_instances import two_instances
from tests.gateway.test_txn_across_instances import split_roles
from tests.gateway.test_zombie_txn_offsets import _fetch_stable, _init, _txn_commit

PRODUCE, ADD_PARTITIONS = 0, 24


def _produce(
    client: RawClient, txn_id: str, pid: int, epoch: int, seq: int, value: bytes = b"v",
    version: int = 9,
) -> int:  # fmt: skip
    """A transactional batch of one record to hot-0 (Produce v12: transaction version 2's,
    which adds the partition itself)."""
    records = build_batch([Record(0, int(time.time() * 1000), None, value)], producer_id=pid,
                          producer_epoch=epoch, base_sequence=seq, transactional=True)  # fmt: skip
    schema = importlib.import_module(f"kio.schema.produce.v{version}.request")
    part = schema.PartitionProduceData(index=0, records=records)
    topic = schema.TopicProduceData(name="hot", partition_data=(part,))
    r = client.request(PRODUCE, version, transactional_id=txn_id, acks=-1,
                       timeout=datetime.timedelta(seconds=30), topic_data=(topic,))  # fmt: skip
    return int(r.responses[0].partition_responses[0].error_code)


def _flow(coordinator: int, owner: int, txn_id: str, group: str) -> dict[str, Any]:
    """The transaction's own requests to `coordinator`; writes to `owner`, which serves
    the partition and the group but not the transactional id."""
    to_coordinator, to_owner = RawClient(coordinator, timeout=30), RawClient(owner, timeout=30)
    try:
        pid, epoch = _init(to_coordinator, txn_id)
        out = {
            "batch of a partition never added": _produce(to_owner, txn_id, pid, epoch, 0),
            "offsets of a group never added": _txn_commit(to_owner, txn_id, group, pid, epoch, 3),
            "the group's offsets then": _fetch_stable(to_owner, group),
        }
        added = to_coordinator.request(
            ADD_PARTITIONS, 3, v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=(AddPartitionsToTxnTopic(name="hot", partitions=(0,)),),
        )  # fmt: skip
        code = added.results_by_topic_v3_and_below[0].results_by_partition[0]
        assert code.partition_error_code == ErrorCode.none, added
        out["batch once added"] = _produce(to_owner, txn_id, pid, epoch, 0)
        out["next batch"] = _produce(to_owner, txn_id, pid, epoch, 1)
        return out
    finally:
        to_coordinator.close()
        to_owner.close()


async def test_writes_are_verified_with_the_coordinator_on_another_instance() -> None:
    async with two_instances() as (owner, other, _backend):
        txn_id, group = await split_roles(other, owner)
        out = await asyncio.to_thread(_flow, other.kafka_port, owner.kafka_port, txn_id, group)
        plog = _hot(owner)
        stable = (plog.high_watermark, plog.last_stable)
    assert out == {
        "batch of a partition never added": ErrorCode.invalid_txn_state,
        "offsets of a group never added": ErrorCode.invalid_txn_state,
        "the group's offsets then": (ErrorCode.none, -1),
        "batch once added": ErrorCode.none,
        "next batch": ErrorCode.none,
    }
    assert stable == (2, 0)  # the two batches of the open transaction, nothing else


def _hot(gateway: Gateway) -> Any:
    return gateway.logs.owned()["persistent://public/default/hot-partition-0"]
