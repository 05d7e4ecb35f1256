"""Where the offsets of a compacted topic's oldest records are kept.

Offsets are counted from the live ledgers (docs/offsets.md). Once Pulsar's retention
has deleted the ledgers below a compaction's horizon, only the compacted ledger
holds their surviving records, and counting there is impossible: whole entries
that compaction emptied are simply absent. So, for every entry that survives a
compaction, kop notes its base offset while the live ledgers still hold it (see
`compaction.py`): a `Survivor`. A surviving entry keeps its message count and
its messages their batch indexes (`entries.py`), so its base offset is
all it takes to give each of its records its original offset.

Pure bookkeeping: sorted parallel arrays (about 32 bytes a survivor, whatever
the topic's size), the horizon the last pass covered, and what changed since the
store last persisted it.
"""

from __future__ import annotations

import bisect
from array import array
from dataclasses import dataclass

from kop.storage.types import Position


@dataclass(frozen=True, slots=True, order=True)
class Survivor:
    """The entry at (`ledger`, `entry`) survived compaction and begins at `offset`;
    it was written at `publish_time` (for `compact,delete` retention)."""

    offset: int
    ledger: int
    entry: int
    publish_time: int = 0

    @property
    def position(self) -> Position:
        return Position(self.ledger, self.entry)


@dataclass(frozen=True, slots=True)
class Horizon:
    """A compaction pass covered every entry up to `position`; `next_offset` follows it.
    `start` is where the first pass began counting: the compacted topic's log start
    (Kafka's stays where the log began, however much compaction removed)."""

    position: Position
    next_offset: int
    start: int = 0


class SurvivorIndex:
    def __init__(self) -> None:
        self.horizon: Horizon | None = None
        self._offsets = array("q")
        self._ledgers = array("q")
        self._entries = array("q")
        self._times = array("q")
        self.created: list[Survivor] = []  # since the last take_changes
        self.dropped: list[Survivor] = []
        self.horizon_changed = False

    def __len__(self) -> int:
        return len(self._offsets)

    def restore(self, survivors: list[Survivor], horizon: Horizon | None) -> None:
        self._set(sorted(survivors))
        self.horizon = horizon
        self.created, self.dropped, self.horizon_changed = [], [], False

    def all(self) -> list[Survivor]:
        return [self._at(i) for i in range(len(self._offsets))]

    def floor(self, offset: int) -> Survivor | None:
        """The last survivor beginning at or below `offset`: where a read of it starts."""
        i = bisect.bisect_right(self._offsets, offset)
        return self._at(i - 1) if i else None

    def at_entry(self, entry_key: tuple[int, int]) -> int | None:
        """The base offset of the surviving entry at `entry_key`, if it is one."""
        n = len(self._offsets)
        i = bisect.bisect_left(range(n), entry_key, key=self._key)
        if i < n and self._key(i) == entry_key:
            return self._offsets[i]
        return None

    def first_at_or_after(self, publish_time: int) -> Survivor | None:
        """The first survivor written at or after `publish_time`: a bisection, since
        they are in append order and publish times only grow (up to clock skew
        between brokers, which moves the answer by at most the skew). Called for
        every request's log start on a `compact,delete` topic."""
        i = bisect.bisect_left(self._times, publish_time)
        return self._at(i) if i < len(self._times) else None

    def replace(self, survivors: list[Survivor], horizon: Horizon) -> None:
        """A pass found these survivors up to `horizon`: the changes are kept for the
        store (`take_changes`)."""
        old = set(self.all())
        new = sorted(set(survivors))
        kept = set(new)
        self.created.extend(s for s in new if s not in old)
        self.dropped.extend(s for s in old if s not in kept)
        self._set(new)
        self.horizon = horizon
        self.horizon_changed = True

    def drop_below(self, offset: int) -> None:
        """Retention (`compact,delete`) or DeleteRecords removed what lies below."""
        i = bisect.bisect_left(self._offsets, offset)
        if i:
            gone = [self._at(j) for j in range(i)]
            self.dropped.extend(gone)
            self._set(self.all()[i:])

    def take_changes(self) -> tuple[list[Survivor], list[Survivor], Horizon | None]:
        created, dropped = self.created, self.dropped
        horizon = self.horizon if self.horizon_changed else None
        self.created, self.dropped, self.horizon_changed = [], [], False
        return created, dropped, horizon

    def return_changes(
        self, created: list[Survivor], dropped: list[Survivor], horizon: Horizon | None
    ) -> None:
        self.created[:0] = created
        self.dropped[:0] = dropped
        self.horizon_changed = self.horizon_changed or horizon is not None

    def _key(self, i: int) -> tuple[int, int]:
        return (self._ledgers[i], self._entries[i])

    def _at(self, i: int) -> Survivor:
        return Survivor(self._offsets[i], self._ledgers[i], self._entries[i], self._times[i])

    def _set(self, survivors: list[Survivor]) -> None:
        self._offsets = array("q", (s.offset for s in survivors))
        self._ledgers = array("q", (s.ledger for s in survivors))
        self._entries = array("q", (s.entry for s in survivors))
        self._times = array("q", (s.publish_time for s in survivors))
