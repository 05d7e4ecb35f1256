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


@dataclass(frozen=True, slots=True, order=True)
class Aborted:
    first_offset: int
    producer_id: int
    last_offset: int  # the abort marker's offset


class TxnIndex:
    def __init__(self) -> None:
        self._open: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._aborted: list[Aborted] = []  # by first offset

    def batch(self, producer_id: int, first_offset: int, transactional: bool) -> None:
        """A data batch at `first_offset` was counted."""
        if transactional:
            self._open.setdefault(producer_id, first_offset)

    def marker(self, producer_id: int, offset: int, commit: bool) -> None:
        """A marker at `offset` ends the producer's transaction (if one is open: a
        marker without one, as the coordinator writes after a crash, changes nothing)."""
        first = self._open.pop(producer_id, None)
        if first is not None and not commit:
            bisect.insort(self._aborted, Aborted(first, producer_id, offset))

    def last_stable(self, end: int) -> int:
        """The last stable offset of a log that ends at `end`."""
        return min(self._open.values(), default=end)

    def aborted(self, start: int, upto: int) -> list[Aborted]:
        """The aborted transactions with records in [start, upto): a fetch from `start`
        that returns records below `upto` lists these."""
        cut = bisect.bisect_left(self._aborted, Aborted(upto, -1, -1))
        return [a for a in self._aborted[:cut] if a.last_offset >= start]

    def trim(self, log_start: int) -> None:
        """Retention removed everything below `log_start`."""
        self._aborted = [a for a in self._aborted if a.last_offset >= log_start]

    def open_transactions(self) -> dict[int, int]:
        return dict(self._open)

    def snapshot(self) -> tuple[dict[int, int], list[Aborted]]:
        """What to persist with the offset index, so a restart resumes without a rescan."""
        return dict(self._open), list(self._aborted)

    @classmethod
    def restore(cls, open_txns: dict[int, int], aborted: list[Aborted]) -> TxnIndex:
        index = cls()
        index._open = dict(open_txns)
        index._aborted = sorted(aborted)
        return index
