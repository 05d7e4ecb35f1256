"""Transaction version 2 (KIP-890 part 2) on the wire, as Kafka 4.x clients use it
(the Java producer, Kafka Streams exactly_once_v2, franz-go): ApiVersions finalizes
`transaction.version` 2; a transactional Produce v12 and a TxnOffsetCommit v5 add
their partition themselves (no AddPartitionsToTxn, no AddOffsetsToTxn); EndTxn v5
bumps the epoch and answers it, so a late write of the ended transaction is fenced
in its partition, and the next transaction begins under the new epoch at sequence 0.
With one instance, and with the transactional id coordinated by another instance
than the one serving the partition and the group (the add goes there, kop.txn.peers).
"""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.txn_offset_commit.v5.request import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)

from conformance.clients.raw import RawClient
from kop.protocol.errors import ErrorCode
from kop.protocol.records import iter_records, split_batches
from tests.gateway.memory_gateway import gateway_with_hot_topic, until
from tests.gateway.test_groups_across_instances import two_instances
from tests.gateway.test_txn_across_instances import split_roles
from tests.gateway.test_txn_verified_across_instances import _produce as produce_v
from tests.gateway.test_zombie_txn_offsets import _fetch_stable, _init

PRODUCE, FETCH, API_VERSIONS, END_TXN, TXN_OFFSET_COMMIT = 0, 1, 18, 26, 28
RETRIABLE = (ErrorCode.not_enough_replicas, ErrorCode.coordinator_load_in_progress)
CONCURRENT = ErrorCode.concurrent_transactions


def _until_settled(send: Any) -> int:
    """A write retried while the coordinator still ends the previous transaction
    (NOT_ENOUGH_REPLICAS for Produce, COORDINATOR_LOAD_IN_PROGRESS for offsets), as
    clients retry it."""
    deadline = time.monotonic() + 20
    while (code := int(send())) in RETRIABLE:
        assert time.monotonic() < deadline, "the previous transaction never completed"
        time.sleep(0.05)
    return code


def _produce(client: RawClient, txn_id: str, pid: int, epoch: int, seq: int, value: bytes) -> int:
    return produce_v(client, txn_id, pid, epoch, seq, value, version=12)


def _commit_offset(client: RawClient, txn_id: str, group: str, pid: int, epoch: int) -> int:
    part = TxnOffsetCommitRequestPartition(
        partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata=None
    )
    topic = TxnOffsetCommitRequestTopic(name="hot", partitions=(part,))
    r = client.request(TXN_OFFSET_COMMIT, 5, transactional_id=txn_id, group_id=group,
                       producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="",
                       group_instance_id=None, topics=(topic,))  # fmt: skip
    return int(r.topics[0].partitions[0].error_code)


def _end(client: RawClient, txn_id: str, pid: int, epoch: int, commit: bool) -> tuple[int, ...]:
    r = client.request(END_TXN, 5, transactional_id=txn_id, producer_id=pid,
                       producer_epoch=epoch, committed=commit)  # fmt: skip
    return int(r.error_code), int(r.producer_id), int(r.producer_epoch)


def _read_committed(client: RawClient) -> list[bytes]:
    part = FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    r = client.request(FETCH, 12, max_wait=datetime.timedelta(0), min_bytes=0,
                       max_bytes=1 << 20, isolation_level=1, session_id=0, session_epoch=-1,
                       topics=(FetchTopic(topic="hot", partitions=(part,)),),
                       forgotten_topics_data=(), rack_id="")  # fmt: skip
    got = r.responses[0].partitions[0]
    aborted = {(a.producer_id, a.first_offset) for a in got.aborted_transactions or ()}
    out = []
    for head, data in split_batches(got.records or b"", max_batch_bytes=1 << 20):
        skipped = any(p == head.producer_id and f <= head.base_offset for p, f in aborted)
        if not head.is_control and not skipped:
            out.extend(r.value for r in iter_records(data))
    return out


def _flow(coordinator: int, owner: int, txn_id: str, group: str) -> dict[str, Any]:
    """The transaction's own requests to `coordinator`; writes to `owner`."""
    to_coordinator, to_owner = RawClient(coordinator, timeout=30), RawClient(owner, timeout=30)
    try:
        features = to_owner.request(API_VERSIONS, 3, client_software_name="t",
                                    client_software_version="1")  # fmt: skip
        pid, e = _init(to_coordinator, txn_id)
        out: dict[str, Any] = {
            "finalized": [(f.name, f.max_version_level) for f in features.finalized_features],
            "features epoch >= 0": features.finalized_features_epoch >= 0,
            "first write": _produce(to_owner, txn_id, pid, e, 0, b"committed"),
            "offsets": _commit_offset(to_owner, txn_id, group, pid, e),
            "commit": _end(to_coordinator, txn_id, pid, e, True),
        }
        # the same EndTxn again (its answer lost): CONCURRENT_TRANSACTIONS until the
        # markers are written, then the answer the first one had
        deadline = time.monotonic() + 20
        while (again := _end(to_coordinator, txn_id, pid, e, True))[0] == CONCURRENT:
            assert time.monotonic() < deadline, "the markers were never written"
            time.sleep(0.05)
        out["commit sent again"] = again
        out["late write of the ended transaction"] = _produce(to_owner, txn_id, pid, e, 1, b"x")
        out["next transaction"] = _until_settled(
            lambda: _produce(to_owner, txn_id, pid, e + 1, 0, b"aborted")
        )
        out["abort"] = _end(to_coordinator, txn_id, pid, e + 1, False)
        out["committed offset"] = _fetch_stable(to_owner, group)
        out["read_committed"] = _read_committed(to_owner)
        return out
    finally:
        to_coordinator.close()
        to_owner.close()


def _expected(pid: int, e: int) -> dict[str, Any]:
    return {
        "finalized": [("transaction.version", 2)],
        "features epoch >= 0": True,
        "first write": ErrorCode.none,
        "offsets": ErrorCode.none,
        "commit": (ErrorCode.none, pid, e + 1),
        "late write of the ended transaction": ErrorCode.invalid_producer_epoch,
        "commit sent again": (ErrorCode.none, pid, e + 1),
        "next transaction": ErrorCode.none,
        "abort": (ErrorCode.none, pid, e + 2),
        "committed offset": (ErrorCode.none, 1),
        "read_committed": [b"committed"],
    }


async def test_a_version_2_producer_adds_its_partitions_implicitly_and_bumps_at_every_end() -> None:
    async with gateway_with_hot_topic(1) as (gateway, _):
        await until(lambda: gateway.txns.partitions.all_loaded, 5)
        port = gateway.kafka_port
        out = await asyncio.to_thread(_flow, port, port, "t", "g")
        meta = gateway.txns.coordinator.meta("t")  # the default namespace's ids are unscoped
    assert meta is not None
    assert out == _expected(meta.producer_id, meta.epoch - 2)


async def test_so_it_is_with_the_coordinator_on_another_instance() -> None:
    async with two_instances() as (owner, other, _backend):
        txn_id, group = await split_roles(other, owner)
        out = await asyncio.to_thread(_flow, other.kafka_port, owner.kafka_port, txn_id, group)
        assert other.txns is not None
        meta = other.txns.coordinator.meta(txn_id)
    assert meta is not None
    assert out == _expected(meta.producer_id, meta.epoch - 2)
