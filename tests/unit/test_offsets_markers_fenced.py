"""A transaction's marker for an offsets partition (AddOffsetsToTxn's) is judged as a
data partition judges its markers (issue 33): one of an older producer epoch than
the last marker seen there is refused (INVALID_PRODUCER_EPOCH, which the coordinator
takes as done), and one from an older coordinator epoch too
(TRANSACTION_COORDINATOR_FENCED). Before, a stale retry of an earlier transaction's
ABORT dropped the offsets the producer's next transaction had committed, and a
coordinator that had lost its state partition could commit or drop them."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kop.groups.txn_offsets import PendingOffsets
from kop.groups.types import CommittedOffset, TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError

TP = TopicPartition("orders", 0)


class _Store:
    def __init__(self) -> None:
        self.ended: list[tuple[int, bool]] = []

    def partition_for(self, group: str) -> int:
        return 0

    async def commit_pending(self, group: str, pid: int, offsets: Mapping[object, object]) -> None:
        pass

    async def end_pending(
        self, group: str, pid: int, offsets: Mapping[TopicPartition, CommittedOffset], commit: bool
    ) -> None:
        self.ended.append((offsets[TP].offset, commit))


class _Offsets:
    def __init__(self) -> None:
        self.committed: list[int] = []

    def applied(self, group: str, offsets: Mapping[TopicPartition, CommittedOffset]) -> None:
        self.committed.append(offsets[TP].offset)


def _at(offset: int) -> dict[TopicPartition, CommittedOffset]:
    return {TP: CommittedOffset(offset)}


async def test_stale_markers_leave_the_next_transactions_offsets_alone() -> None:
    store, offsets = _Store(), _Offsets()
    pending = PendingOffsets(store, offsets, lambda _p: True)  # type: ignore[arg-type]
    await pending.add("g", 7, _at(10))
    # the transaction's marker, from the coordinator that took the state partition over
    await pending.end_txn(0, 7, 3, True, coordinator_epoch=4)
    await pending.add("g", 7, _at(20))  # the producer's next transaction
    with pytest.raises(KafkaError) as fenced:  # the coordinator before it, late
        await pending.end_txn(0, 7, 3, False, coordinator_epoch=3)
    assert fenced.value.code is ErrorCode.transaction_coordinator_fenced
    with pytest.raises(KafkaError) as stale:  # a marker of an epoch already ended here
        await pending.end_txn(0, 7, 2, False, coordinator_epoch=4)
    assert stale.value.code is ErrorCode.invalid_producer_epoch
    assert pending.unstable("g") == {TP}  # offset 20 still waits for its own marker
    await pending.end_txn(0, 7, 4, True, coordinator_epoch=4)
    assert offsets.committed == [10, 20] and store.ended == [(10, True), (20, True)]
