"""The offset index: sparse checkpoints `(offset, position)` plus the high-water mark.

Pure: no I/O. The tail follower feeds it every entry it counts (`record`);
it keeps a checkpoint every `interval` records and at the first entry of every
ledger (Pulsar deletes whole ledgers, so after a trim the first surviving record
is a ledger start whose offset is known), prunes what retention removed
(`trim_to`), and thins itself past `max_checkpoints` so memory stays bounded
however long the partition grows. The mark (last counted position, next offset)
is what a restart resumes against and what keeps offsets from going backwards.
The log start is where the counted data begins, or the DeleteRecords floor
(`deleted_below`) above it: Pulsar cannot delete single messages, so a client's
deletion is a floor kop keeps, and the data below stays until Pulsar drops it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from kop.log.counting import LogEntry
from kop.storage.types import Position


@dataclass(frozen=True, slots=True, order=True)
class Checkpoint:
    """The entry at `position` begins at offset `offset`;
    `max_ts_before` is the largest timestamp of all records before it."""

    offset: int
    position: Position
    max_ts_before: int = -1


@dataclass(frozen=True, slots=True)
class Mark:
    """The last entry counted and the offset after it."""

    position: Position
    next_offset: int
    max_timestamp: int = -1


class OffsetIndex:
    def __init__(
        self,
        interval: int = 1000,
        checkpoints: list[Checkpoint] | None = None,
        mark: Mark | None = None,
        max_checkpoints: int = 10_000,
    ) -> None:
        self._interval = max(1, interval)
        self._max = max(4, max_checkpoints)
        self.conflicts = 0  # checkpoints found disagreeing with the count (healed)
        self.restore(checkpoints or [], mark)

    def restore(
        self, checkpoints: list[Checkpoint], mark: Mark | None, deleted_below: int = 0
    ) -> None:
        """Start from what was persisted: the checkpoints, the mark and the floor.

        Older kop counted message by message and could checkpoint a message inside
        a batch entry; counting is by entry now, so such checkpoints are forgotten
        and positions name entries (batch index -1)."""
        self._checkpoints: list[Checkpoint] = []
        self._offsets: list[int] = []
        self._times: list[int] = []
        self._by_entry: dict[tuple[int, int], Checkpoint] = {}
        self.created: list[Checkpoint] = []  # new since the last flush, for the store to keep
        self.dropped = [c for c in checkpoints if c.position.batch > 0]  # for the store to forget
        for c in sorted(checkpoints):
            if c.position.batch <= 0:
                self._append(Checkpoint(c.offset, _entry(c.position), c.max_ts_before))
        if mark is not None:
            mark = Mark(_entry(mark.position), mark.next_offset, mark.max_timestamp)
        last = self._checkpoints[-1] if self._checkpoints else None
        self.high_watermark = mark.next_offset if mark else (last.offset if last else 0)
        self.max_timestamp = mark.max_timestamp if mark else (last.max_ts_before if last else -1)
        self.last_position: Position | None = mark.position if mark else None
        self.deleted_below = deleted_below

    # -- reading ---------------------------------------------------------------

    @property
    def checkpoints(self) -> list[Checkpoint]:
        return list(self._checkpoints)

    @property
    def data_start(self) -> int:
        """Where the counted data begins: retention moves it when Pulsar deletes."""
        return self._checkpoints[0].offset if self._checkpoints else self.high_watermark

    @property
    def log_start(self) -> int:
        """The first offset served. The floor is capped at the high watermark for the
        moment a restart counts back up to it (offsets are never served meanwhile)."""
        return max(self.data_start, min(self.deleted_below, self.high_watermark))

    @property
    def first(self) -> Checkpoint | None:
        return self._checkpoints[0] if self._checkpoints else None

    @property
    def mark(self) -> Mark | None:
        if self.last_position is None:
            return None
        return Mark(self.last_position, self.high_watermark, self.max_timestamp)

    def at_entry(self, entry_key: tuple[int, int]) -> Checkpoint | None:
        return self._by_entry.get(entry_key)

    def floor(self, offset: int) -> Checkpoint | None:
        """The last checkpoint at or below `offset`: where a read of `offset` starts."""
        i = bisect.bisect_right(self._offsets, offset)
        return self._checkpoints[i - 1] if i else None

    def floor_for_position(self, position: Position) -> Checkpoint | None:
        """The last checkpoint at or before `position`: where a search for the entry
        stored there starts (positions grow with offsets)."""
        i = bisect.bisect_right(self._checkpoints, position, key=lambda c: c.position)
        return self._checkpoints[i - 1] if i else None

    def floor_for_time(self, timestamp: int) -> Checkpoint | None:
        """The last checkpoint before which no record reaches `timestamp`: a scan for
        the first record with timestamp >= `timestamp` starts here. `max_ts_before`
        never decreases along the log, so this is a bisection."""
        i = bisect.bisect_left(self._times, timestamp)
        return self._checkpoints[i - 1] if i else None

    # -- writing (the tail follower only) -----------------------------------------

    def record(self, item: LogEntry) -> Checkpoint | None:
        """Account for the next entry in log order; returns the checkpoint it made."""
        if item.base_offset != self.high_watermark:
            raise ValueError(
                f"{item.position} counted at {item.base_offset}, expected {self.high_watermark}"
            )
        made: Checkpoint | None = None
        if item.position.is_entry_start:
            known = self._by_entry.get(item.position.entry_key)
            if known is not None and known.offset != item.base_offset:
                # The count is a pure function of the log; a checkpoint that disagrees
                # was wrong (and so are the ones after it). Heal instead of stopping.
                self.conflicts += 1
                cut = bisect.bisect_left(self._offsets, known.offset)
                self._rebuild(self._checkpoints[:cut], dropped=self._checkpoints[cut:])
                known = None
            if known is None and self._wants_checkpoint(item):
                made = Checkpoint(item.base_offset, item.position, self.max_timestamp)
                self._append(made)
                self.created.append(made)
                if len(self._checkpoints) > self._max:
                    self._thin()
        self.last_position = item.position
        self.high_watermark = item.next_offset
        self.max_timestamp = max(self.max_timestamp, item.entry.max_timestamp)
        return made

    def _wants_checkpoint(self, item: LogEntry) -> bool:
        last = self._checkpoints[-1] if self._checkpoints else None
        if last is None:
            return True
        new_ledger = self.last_position is None or item.position.ledger != self.last_position.ledger
        return new_ledger or item.base_offset - last.offset >= self._interval

    def delete_below(self, offset: int) -> None:
        """DeleteRecords: offsets below `offset` are no longer served. Checkpoints
        stay (their data is still in Pulsar, and reads start from them) until
        retention prunes them. Never moves back."""
        self.deleted_below = max(self.deleted_below, offset)

    def extend_down(self, offset: int, position: Position) -> None:
        """The entry at `position`, below the first checkpoint, begins at `offset`:
        the persisted index had lost the checkpoints there. It becomes the first."""
        if offset >= self.data_start:
            return
        c = Checkpoint(offset, _entry(position), -1)
        self._rebuild([c, *self._checkpoints], dropped=[])
        self.created.append(c)

    def skip_to(self, position: Position, offset: int) -> None:
        """Counting resumes at `offset` with the entry at `position` because what
        came before it is gone (a trim the follower ran into): everything below is
        pruned and `position` becomes the log start."""
        self.high_watermark = max(self.high_watermark, offset)
        self.trim_to(offset, position)

    def trim_to(self, log_start: int, position: Position | None) -> None:
        """Retention removed everything below `log_start`, whose first record sits at
        `position` (None: nothing survives). Checkpoints below go; one is kept at the
        new start so a restart and history reads know it."""
        if log_start <= self.data_start and self._checkpoints:
            return
        keep = bisect.bisect_left(self._offsets, log_start)
        survivors = self._checkpoints[keep:]
        if (
            position is not None
            and log_start < self.high_watermark
            and (not survivors or survivors[0].offset != log_start)
        ):
            survivors.insert(0, Checkpoint(log_start, position, -1))
            self.created.append(survivors[0])
        self._rebuild(survivors, dropped=self._checkpoints[:keep])

    def _append(self, c: Checkpoint) -> None:
        self._checkpoints.append(c)
        self._offsets.append(c.offset)
        self._times.append(c.max_ts_before)
        self._by_entry[c.position.entry_key] = c

    def _thin(self) -> None:
        """Drop every second checkpoint of the older half (never the first): reads
        there seek a little further, and memory stays bounded. A trim that lands on
        a thinned ledger start is still exact: retention then counts forward to
        the next known position."""
        half = len(self._checkpoints) // 2
        kept: list[Checkpoint] = []
        thinned: list[Checkpoint] = []
        for i, c in enumerate(self._checkpoints):
            (kept if i == 0 or i >= half or i % 2 == 0 else thinned).append(c)
        self._rebuild(kept, dropped=thinned)

    def _rebuild(self, kept: list[Checkpoint], dropped: list[Checkpoint]) -> None:
        self.dropped.extend(dropped)
        self._checkpoints, self._offsets, self._times, self._by_entry = [], [], [], {}
        for c in kept:
            self._append(c)

    def take_changes(self) -> tuple[list[Checkpoint], list[Checkpoint]]:
        """(created, dropped) since the last call: what a flush persists."""
        created, self.created = self.created, []
        dropped, self.dropped = self.dropped, []
        return created, dropped

    def return_changes(self, created: list[Checkpoint], dropped: list[Checkpoint]) -> None:
        """A flush failed: keep its changes for the next one."""
        self.created[:0] = created
        self.dropped[:0] = dropped


def _entry(position: Position) -> Position:
    return Position(position.ledger, position.entry)
