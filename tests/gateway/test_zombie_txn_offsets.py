"""A TxnOffsetCommit of a producer whose transaction is over (fenced by a new
incarnation, aborted by a timeout or by recovery after a restart) is refused, as
Kafka verifies it with the transaction coordinator (KIP-890). Accepted, its offsets
stayed pending for good: the group's consumers with isolation read_committed (they
fetch offsets with require_stable) got UNSTABLE_OFFSET_COMMIT forever, and the
application could never start again (the read-process-write test under kill -9
stalled so, when a kill landed between AddOffsetsToTxn and TxnOffsetCommit). Where
the group's coordinator is another instance than the transaction's, the abort's
marker fences the producer there, as in a partition's log."""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

from kio.schema.offset_fetch.v8.request import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.schema.txn_offset_commit.v3.request import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)

from conformance.clients.raw import RawClient
from kop.protocol.errors import ErrorCode
from tests.gateway.memory_gateway import gateway_with_hot_topic
from tests.gateway.test_groups_across_instances import two_instances
from tests.gateway.test_txn_across_instances import split_roles

INIT_PRODUCER_ID, ADD_OFFSETS, TXN_OFFSET_COMMIT, OFFSET_FETCH = 22, 25, 28, 9


def _init(client: RawClient, txn_id: str) -> tuple[int, int]:
    """InitProducerId, retried while the coordinator loads and while the previous
    incarnation's transaction ends."""
    deadline = time.monotonic() + 30
    while True:
        r = client.request(INIT_PRODUCER_ID, 4, transactional_id=txn_id,
                           transaction_timeout=datetime.timedelta(seconds=60),
                           producer_id=-1, producer_epoch=-1)  # fmt: skip
        if r.error_code not in (
            ErrorCode.concurrent_transactions,
            ErrorCode.coordinator_load_in_progress,
        ):
            assert r.error_code == ErrorCode.none, r
            return int(r.producer_id), int(r.producer_epoch)
        assert time.monotonic() < deadline, "the fenced transaction never ended"
        time.sleep(0.05)


def _txn_commit(
    client: RawClient, txn_id: str, group: str, pid: int, epoch: int, offset: int
) -> int:
    part = TxnOffsetCommitRequestPartition(
        partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
        committed_metadata=None,
    )  # fmt: skip
    topic = TxnOffsetCommitRequestTopic(name="hot", partitions=(part,))
    r = client.request(TXN_OFFSET_COMMIT, 3, transactional_id=txn_id, group_id=group,
                       producer_id=pid, producer_epoch=epoch, group_instance_id=None,
                       topics=(topic,))  # fmt: skip
    return int(r.topics[0].partitions[0].error_code)


def _fetch_stable(client: RawClient, group: str) -> tuple[int, int]:
    topics = (OffsetFetchRequestTopics(name="hot", partition_indexes=(0,)),)
    asked = (OffsetFetchRequestGroup(group_id=group, topics=topics),)
    r = client.request(OFFSET_FETCH, 8, require_stable=True, groups=asked)
    part = r.groups[0].topics[0].partitions[0]
    return int(part.error_code), int(part.committed_offset)


def _zombie(txn_port: int, txn_id: str, group_port: int, group: str) -> dict[str, Any]:
    """The transaction's requests to `txn_port`, the group's to `group_port`."""
    to_txn, to_group = RawClient(txn_port, timeout=30), RawClient(group_port, timeout=30)
    try:
        pid, epoch = _init(to_txn, txn_id)
        added = to_txn.request(ADD_OFFSETS, 3, transactional_id=txn_id, producer_id=pid,
                               producer_epoch=epoch, group_id=group)  # fmt: skip
        assert added.error_code == ErrorCode.none, added
        _, new_epoch = _init(to_txn, txn_id)  # a new incarnation: the old transaction aborted
        out = {
            "zombie commit": _txn_commit(to_group, txn_id, group, pid, epoch, 5),
            "fetch after zombie": _fetch_stable(to_group, group),
        }
        added = to_txn.request(ADD_OFFSETS, 3, transactional_id=txn_id, producer_id=pid,
                               producer_epoch=new_epoch, group_id=group)  # fmt: skip
        out["current commit"] = _txn_commit(to_group, txn_id, group, pid, new_epoch, 7)
        out["fetch in transaction"] = _fetch_stable(to_group, group)
        return out
    finally:
        to_txn.close()
        to_group.close()


EXPECTED = {
    "zombie commit": ErrorCode.invalid_producer_epoch,
    "fetch after zombie": (ErrorCode.none, -1),
    "current commit": ErrorCode.none,
    "fetch in transaction": (ErrorCode.unstable_offset_commit, -1),
}


async def test_a_fenced_producers_txn_offset_commit_is_refused_leaving_nothing_pending() -> None:
    async with gateway_with_hot_topic(1) as (gateway, _):
        port = gateway.kafka_port
        out = await asyncio.to_thread(_zombie, port, "t", port, "g")
    assert out == EXPECTED


async def test_so_it_is_where_the_group_coordinator_is_another_instance() -> None:
    async with two_instances() as (first, second, _backend):
        txn_id, group = await split_roles(first, second)
        out = await asyncio.to_thread(_zombie, first.kafka_port, txn_id, second.kafka_port, group)
    assert out == EXPECTED
