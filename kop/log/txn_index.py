"""A partition's open and aborted transactions, from its log (pure).

What `read_committed` needs, rebuilt from the log as the tail follower counts it:
the *last stable offset* (the first offset of the earliest transaction still open,
or the end of the log) and, for a fetch, the aborted transactions whose records it
may contain (producer id and first offset, Kafka's `aborted_transactions`), with
which a consumer skips exactly the aborted records. A marker closes its producer's
transaction; a commit leaves nothing behind, an abort leaves an entry until
retention removes the records it covered.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

# What is persisted with the offset index: open transactions (producer id -> first
# offset) and the aborted ones, as of the persisted mark.
TxnSnapshot = tuple[dict[int, int], list["Aborted"]]


@dataclass(frozen=True, slots=True, order=True)
class Aborted:
    first_offset: int
    producer_id: int
    last_offset: int  # the abort marker's offset


class TxnIndex:
    def __init__(self) -> None:
        self._open: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._aborted: list[Aborted] = []  # by first offset
        self._dirty = False  # changed since the last snapshot taken for persisting
        # Entries below this are in the restored snapshot: a follower that resumes
        # from an earlier checkpoint counts them again, and they must not count twice.
        self.restored_to = 0

    def batch(self, producer_id: int, first_offset: int, transactional: bool) -> None:
        """A data batch at `first_offset` was counted."""
        if transactional and producer_id not in self._open:
            self._open[producer_id] = first_offset
            self._dirty = True

    def marker(self, producer_id: int, offset: int, commit: bool) -> None:
        """A marker at `offset` ends the producer's transaction (if one is open: a
        marker without one, as the coordinator writes after a crash, changes nothing)."""
        first = self._open.pop(producer_id, None)
        if first is None:
            return
        self._dirty = True
        if not commit:
            bisect.insort(self._aborted, Aborted(first, producer_id, offset))

    def last_stable(self, end: int) -> int:
        """The last stable offset of a log that ends at `end`."""
        if not self._open:  # the usual case, asked per partition of every fetch
            return end
        return min(self._open.values(), default=end)

    def aborted(self, start: int, upto: int) -> list[Aborted]:
        """The aborted transactions with records in [start, upto): a fetch from `start`
        that returns records below `upto` lists these."""
        cut = bisect.bisect_left(self._aborted, Aborted(upto, -1, -1))
        return [a for a in self._aborted[:cut] if a.last_offset >= start]

    def trim(self, log_start: int) -> None:
        """Retention removed everything below `log_start`."""
        kept = [a for a in self._aborted if a.last_offset >= log_start]
        if len(kept) != len(self._aborted):
            self._aborted, self._dirty = kept, True

    def is_open(self, producer_id: int) -> bool:
        return producer_id in self._open

    def open_transactions(self) -> dict[int, int]:
        return dict(self._open)

    def snapshot(self) -> TxnSnapshot:
        """What to persist with the offset index, so a restart resumes without a rescan."""
        return dict(self._open), list(self._aborted)

    def take_changes(self) -> TxnSnapshot | None:
        """The snapshot to persist now, if anything changed since the last one taken
        (`return_changes` when persisting it failed). One snapshot holds it all: the
        aborted list spans the retained log, a few entries per aborted transaction."""
        if not self._dirty:
            return None
        self._dirty = False
        return self.snapshot()

    def return_changes(self) -> None:
        self._dirty = True

    def restore(self, snapshot: TxnSnapshot, upto: int) -> None:
        """As persisted with the mark the tail follower resumes after (`upto`: the
        offset after that mark)."""
        open_txns, aborted = snapshot
        self._open = dict(open_txns)
        self._aborted = sorted(aborted)
        self._dirty = False
        self.restored_to = upto
