"""The one place where stored entries become Kafka offsets.

A counter starts from an anchor whose offset is known (a checkpoint, the mark of
the last counted entry, or the topic's beginning) and assigns each next entry
its base offset (an entry takes as many offsets as it holds records). The tail
follower, history reads and retention scans all count with it, so they cannot
disagree. It checks what docs/offsets.md asks of every read: the first entry must be
the one the anchor names (else the data was trimmed, and counting on would shift
every offset), and an entry passing a known checkpoint must be at that
checkpoint's offset. Re-deliveries after a reconnect (positions at or before the
last counted one) are skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kop.entries import codec as entries
from kop.entries.codec import Entry
from kop.storage.types import Position, StoredEntry


@dataclass(frozen=True, slots=True)
class LogEntry:
    """A counted entry: `entry.count` offsets from `base_offset`."""

    base_offset: int
    position: Position
    entry: Entry

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.entry.count - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.entry.count


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where counting starts. `inclusive`: the entry at `position` is the first
    counted, at `offset` (a checkpoint). Otherwise `position` was counted already
    and `offset` is the next one (a mark). No position: the topic's beginning."""

    position: Position | None
    offset: int
    inclusive: bool = True


class TrimDetected(Exception):
    """The anchor's entry is gone (or a checkpoint disagrees with the count):
    what the reader delivered first is `found` (None: nothing at all)."""

    def __init__(self, anchor: Anchor, found: StoredEntry | None) -> None:
        where = "nothing" if found is None else found.position
        super().__init__(f"expected {anchor.position}, found {where}")
        self.anchor = anchor
        self.found = found


# Offset the index knows for an entry start, if any.
KnownOffset = Callable[[tuple[int, int]], int | None]


class LogCounter:
    def __init__(self, anchor: Anchor, known: KnownOffset | None = None) -> None:
        self.anchor = anchor
        self.next_offset = anchor.offset
        self.last: Position | None = None
        self._known = known
        self._checked = anchor.position is None

    def feed(self, msg: StoredEntry) -> LogEntry | None:
        """The counted entry, or None for an entry counted already."""
        pos = msg.position
        if not self._checked:
            expected = self.anchor.position
            assert expected is not None
            if pos.entry_key != expected.entry_key:
                raise TrimDetected(self.anchor, msg)
            self._checked = True
            if not self.anchor.inclusive:
                self.last = expected
        if self.last is not None and pos.entry_key <= self.last.entry_key:
            return None
        if self._known is not None and self.last is not None:
            known = self._known(pos.entry_key)
            if known is not None and known != self.next_offset:
                raise TrimDetected(self.anchor, msg)
        base = self.next_offset
        entry = entries.decode(msg, base)
        self.next_offset = base + entry.count
        self.last = pos
        return LogEntry(base, pos, entry)

    def restart(self, other: LogCounter) -> None:
        """Count on as `other` does (counting resumed elsewhere, after a trim)."""
        self.anchor, self.next_offset, self.last = other.anchor, other.next_offset, other.last
        self._known, self._checked = other._known, other._checked

    @property
    def checked(self) -> bool:
        """Whether the anchor's entry was found (False: nothing read yet)."""
        return self._checked

    @property
    def mark(self) -> Anchor:
        """Where a counter that continues after this one starts."""
        if self.last is None:
            return self.anchor
        return Anchor(self.last, self.next_offset, inclusive=False)
