"""Writing a transaction's markers into the partitions this instance serves.

A marker is appended through the partition's own log, like a produced batch (the
owner's fencing writer, the tail follower counting it), so it takes the next
offset, closes the producer's transaction in the partition's index and, with a later
epoch, fences the producer there. A partition another instance serves gets its
marker from that instance (kop.txn.peers), as Kafka's coordinators send
markers to partition leaders. Partitions are named as the coordinator records
them: (the Pulsar topic of the partition, its Kafka index); a non-partitioned
topic's is the topic itself. A partition of the offsets topic (AddOffsetsToTxn's)
gets no marker record: the group coordinator commits or drops the offsets the
transaction committed there (kop.groups.txn_offsets), wherever that is. Whatever
cannot be written now raises StorageError: the coordinator retries.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from kop.cluster.member import Member
from kop.entries.formats import EntryFormat
from kop.partitions.manager import LogManager
from kop.protocol.control import Marker, marker_batch
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import BatchHeader, read_header
from kop.storage.types import StorageError
from kop.txn.peers import CoordinatorFenced, Peers
from kop.txn.state import Partition

log = logging.getLogger(__name__)


class OffsetsMarker(Protocol):
    async def end_txn(
        self, partition: int, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int
    ) -> None:
        """The transaction's offsets in offsets partition `partition` are committed
        or dropped; raises StorageError when that cannot be done now, KafkaError for a
        stale marker (as a data partition's log refuses one)."""
        ...


class TxnMarkers:
    def __init__(
        self, logs: LogManager, owned: Callable[[str], bool], now_ms: Callable[[], int],
        offsets: OffsetsMarker | None = None, offsets_topic: str = "",
        owner: Callable[[str], Member | None] = lambda _name: None,
        peers: Peers | None = None,
    ) -> None:  # fmt: skip
        self._owner = owner  # the instance serving a partition topic
        self._peers = peers  # how markers reach it
        self._logs = logs
        self._owned = owned  # a partition topic this instance serves
        self._now_ms = now_ms
        self._offsets = offsets  # the group coordinator (AddOffsetsToTxn's partitions)
        self._offsets_prefix = f"{offsets_topic}-partition-"

    async def write(self, partitions: frozenset[Partition], marker: Marker) -> None:
        batch = marker_batch(marker, self._now_ms())
        head = read_header(batch)
        elsewhere: dict[int, tuple[Member, list[Partition]]] = {}
        for name, index in sorted(partitions):
            if not self._owned(name):
                owner = self._owner(name)
                if owner is None or self._peers is None:
                    raise StorageError(f"{name} is served by another instance")
                elsewhere.setdefault(owner.node_id, (owner, []))[1].append((name, index))
            elif self._offsets is not None and name.startswith(self._offsets_prefix):
                offsets = self._offsets
                await _judged(name, offsets.end_txn(
                    index, marker.producer_id, marker.producer_epoch, marker.commit,
                    marker.coordinator_epoch,
                ))  # fmt: skip
            else:
                await _judged(name, self._append(name, head, batch))
        for owner, parts in elsewhere.values():
            await self._peers.write(owner, parts, marker)  # type: ignore[union-attr]

    async def _append(self, name: str, head: BatchHeader, batch: bytes) -> None:
        plog = await self._logs.partition(name)
        # Either format: a marker is always stored as a whole batch.
        done = await plog.begin_append([(head, batch)], EntryFormat.KAFKA)
        await done


async def _judged(name: str, writing: Awaitable[None]) -> None:
    """A marker written, or what its refusal means to the coordinator."""
    try:
        await writing
    except KafkaError as exc:
        if exc.code is ErrorCode.transaction_coordinator_fenced:
            raise CoordinatorFenced(f"marker for {name}: {exc}") from exc
        if exc.code is ErrorCode.invalid_producer_epoch:
            # The partition has seen a later epoch of the producer: nothing is left
            # to end there, and retrying would never succeed (Kafka drops it too).
            log.info("marker for %s not needed: %s", name, exc)
            return
        raise StorageError(f"marker for {name} not written: {exc}") from exc
