"""Offsets committed inside transactions (TxnOffsetCommit), kept aside until their
transaction ends, as Kafka keeps pending transactional offsets: the commit marker
makes them the group's committed offsets (then OffsetFetch returns them and the
mirrored subscription moves), an abort drops them. They are durable from the
start (`t|` records of the offsets topic), so a kop that restarts between the
commit and the marker still has them when the coordinator sends the marker again.

A marker also fences its producer here, as one fences it in a partition's log: a
TxnOffsetCommit of an older epoch than the last marker's (a zombie of a transaction
already aborted: fenced, timed out, or ended by recovery after a restart) is
refused. Accepted, its offsets would stay pending for good, since no marker for
that transaction comes again, and the group's read_committed consumers would get
UNSTABLE_OFFSET_COMMIT forever. (The transaction coordinator verifies it too where
it is this instance: kop.api.txn_offsets.)"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kop.groups.offsets import Offsets
from kop.groups.offsets_store import OffsetsStore
from kop.groups.types import CommittedOffset, TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.types import StorageError

ByGroup = dict[str, dict[TopicPartition, CommittedOffset]]


class PendingOffsets:
    def __init__(
        self, store: OffsetsStore, offsets: Offsets, loaded: Callable[[int], bool]
    ) -> None:
        self._loaded = loaded  # an offsets partition coordinated here now
        self._store = store
        self._offsets = offsets
        self._by_producer: dict[int, ByGroup] = {}
        # producer id -> (producer epoch, coordinator epoch) of its last marker here
        self._last_marker: dict[int, tuple[int, int]] = {}

    def restore(self, pending: Mapping[int, ByGroup]) -> None:
        for pid, by_group in pending.items():
            mine = self._by_producer.setdefault(pid, {})
            for group, offsets in by_group.items():
                mine.setdefault(group, {}).update(offsets)

    def unload(self, groups: list[str]) -> None:
        gone = set(groups)
        for pid in list(self._by_producer):
            by_group = self._by_producer[pid]
            for group in gone & set(by_group):
                del by_group[group]
            if not by_group:
                del self._by_producer[pid]

    def groups(self) -> set[str]:
        return {g for by_group in self._by_producer.values() for g in by_group}

    def unstable(self, group: str) -> set[TopicPartition]:
        """The group's partitions with an offset in a transaction not yet ended."""
        return {tp for by_group in self._by_producer.values() for tp in by_group.get(group, {})}

    def fenced(self, producer_id: int, epoch: int) -> bool:
        """A marker of a later epoch of the producer came here: this one is a zombie."""
        return epoch < self._last_marker.get(producer_id, (-1, -1))[0]

    async def add(
        self, group: str, producer_id: int, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        """Persisted first, then held."""
        await self._store.commit_pending(group, producer_id, offsets)
        self._by_producer.setdefault(producer_id, {}).setdefault(group, {}).update(offsets)

    async def end_txn(
        self, partition: int, producer_id: int, epoch: int, commit: bool,
        coordinator_epoch: int = -1,
    ) -> None:  # fmt: skip
        """The marker of the producer's transaction for offsets partition `partition`:
        the offsets it committed for that partition's groups are committed or dropped,
        each group's at once (a failure leaves the rest for the marker's retry). Raises
        StorageError while the partition is not loaded here (the marker is retried),
        and KafkaError for a marker a data partition would refuse too: of an older
        producer epoch than the last marker here, or from an older coordinator (a late
        retry must not end the producer's next transaction)."""
        if not self._loaded(partition):
            raise StorageError(f"offsets partition {partition} is not loaded here")
        seen_epoch, seen_coordinator = self._last_marker.get(producer_id, (-1, -1))
        if epoch < seen_epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"marker of producer {producer_id} at epoch {epoch}; offsets partition "
                f"{partition} has seen {seen_epoch}",
            )
        if coordinator_epoch < seen_coordinator:
            raise KafkaError(
                ErrorCode.transaction_coordinator_fenced,
                f"marker of producer {producer_id} from coordinator epoch {coordinator_epoch}; "
                f"offsets partition {partition} has seen {seen_coordinator}",
            )
        self._last_marker[producer_id] = (epoch, coordinator_epoch)
        by_group = self._by_producer.get(producer_id, {})
        for group in [g for g in by_group if self._store.partition_for(g) == partition]:
            offsets = by_group[group]
            await self._store.end_pending(group, producer_id, offsets, commit)
            if commit:
                self._offsets.applied(group, offsets)
            del by_group[group]
        if not by_group:
            self._by_producer.pop(producer_id, None)
