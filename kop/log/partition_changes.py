"""What a partition's index flush persists, and what it has persisted: the offset
index's new and dropped checkpoints, its mark, the producers changed since the last
flush and the transaction index. A failed flush gives its changes back for the next."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kop.log.offset_index import Checkpoint, Mark, OffsetIndex
from kop.log.producer_state import ProducerStates, Snapshot
from kop.log.txn_index import TxnIndex, TxnSnapshot
from kop.log.write_gate import Handle


@dataclass(slots=True)
class Changes:
    """What a flush persists for one partition."""

    created: list[Checkpoint]
    dropped: list[Checkpoint]
    mark: Mark | None
    producers: dict[int, Snapshot | None]
    txns: TxnSnapshot | None = None  # the transaction index, when it changed

    def __bool__(self) -> bool:
        return bool(
            self.created or self.dropped or self.mark or self.producers or self.txns is not None
        )


class PartitionChanges:
    """The changes of one partition's state since its last flush."""

    def __init__(
        self,
        index: OffsetIndex,
        producers: ProducerStates[Handle],
        txns: TxnIndex,
        log_start: Callable[[], int],
    ) -> None:
        self._index = index
        self._producers = producers
        self._txns = txns
        self._log_start = log_start
        self.flushed_mark: Mark | None = None  # the mark the store holds

    def take(self) -> Changes:
        created, dropped = self._index.take_changes()
        mark = self._index.mark
        if mark == self.flushed_mark:
            mark = None
        self._txns.trim(self._log_start())
        return Changes(
            created, dropped, mark, self._producers.take_changes(), self._txns.take_changes()
        )

    def flushed(self, changes: Changes) -> None:
        if changes.mark is not None:
            self.flushed_mark = changes.mark

    def give_back(self, changes: Changes) -> None:
        self._index.return_changes(changes.created, changes.dropped)
        self._producers.return_changes(list(changes.producers))
        if changes.txns is not None:
            self._txns.return_changes()
