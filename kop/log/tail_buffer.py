"""Recent entries kept in memory so fetches at the tail never touch Pulsar.

Bounded in total across partitions: every buffer draws on one `TailBudget`;
when the sum passes the budget, the largest buffers give up their oldest
entries first (a busy partition cannot starve the memory of all the others,
and an idle one keeps its small tail).
"""

from __future__ import annotations

import bisect

from kop.log.counting import LogEntry
from kop.storage.types import Position

# A buffered item's own cost besides its entry's: the LogEntry, its Position and
# offset, and a slot in each of the buffer's three lists (tests/unit/test_tail_memory.py).
_ITEM_COST = 140


def _cost(item: LogEntry) -> int:
    """Memory the budget counts for an item: what its entry holds as Python objects
    (several times the wire size for small records), not the bytes it serves."""
    return max(item.entry.footprint, item.entry.size) + _ITEM_COST


class TailBudget:
    def __init__(self, limit_bytes: int) -> None:
        self.limit = limit_bytes
        self.used = 0
        self._buffers: set[TailBuffer] = set()

    def register(self, buffer: TailBuffer) -> None:
        self._buffers.add(buffer)

    def unregister(self, buffer: TailBuffer) -> None:
        self._buffers.discard(buffer)
        self.used -= buffer.bytes
        buffer.bytes = 0

    def grew(self) -> None:
        """Called after a buffer grew: shrink the largest buffers to 7/8 of the
        budget once the total passes it (amortised: not on every entry)."""
        if self.used <= self.limit:
            return
        target = self.limit * 7 // 8
        for buffer in sorted(self._buffers, key=lambda b: b.bytes, reverse=True):
            if self.used <= target:
                return
            others = self.used - buffer.bytes
            buffer.shrink_to(max(0, target - others, buffer.bytes // 2))


class TailBuffer:
    def __init__(self, budget: TailBudget) -> None:
        self._budget = budget
        self._entries: list[LogEntry] = []
        self._offsets: list[int] = []
        self._positions: list[Position] = []
        self.bytes = 0
        budget.register(self)

    def __hash__(self) -> int:
        return id(self)

    @property
    def first_offset(self) -> int | None:
        return self._offsets[0] if self._offsets else None

    def append(self, item: LogEntry) -> None:
        self._entries.append(item)
        self._offsets.append(item.base_offset)
        self._positions.append(item.position)
        self.bytes += _cost(item)
        self._budget.used += _cost(item)
        if self._budget.limit <= 0:
            self.shrink_to(0)
        else:
            self._budget.grew()

    def shrink_to(self, size: int) -> None:
        drop, freed = 0, 0
        while drop < len(self._entries) and self.bytes - freed > size:
            freed += _cost(self._entries[drop])
            drop += 1
        self._cut(drop, freed)

    def drop_below(self, offset: int) -> None:
        """Retention removed offsets below `offset`: never serve them again."""
        drop = bisect.bisect_left(self._offsets, offset)
        while drop and self._entries[drop - 1].last_offset >= offset:
            drop -= 1
        self._cut(drop, sum(_cost(e) for e in self._entries[:drop]))

    def clear(self) -> None:
        self._cut(len(self._entries), self.bytes)

    def _cut(self, drop: int, freed: int) -> None:
        if not drop:
            return
        del self._entries[:drop]
        del self._offsets[:drop]
        del self._positions[:drop]
        self.bytes -= freed
        self._budget.used -= freed

    def offset_at(self, position: Position) -> int | None:
        """The base offset of the buffered message at `position`, if buffered."""
        i = bisect.bisect_left(self._positions, position)
        if i < len(self._positions) and self._positions[i] == position:
            return self._offsets[i]
        return None

    def read(
        self,
        offset: int,
        end: int,
        out: list[LogEntry],
        size: int,
        max_bytes: int,
        min_one: bool = True,
    ) -> int:
        """Append entries holding offsets in [offset, end) to `out`, each while it fits
        in `max_bytes` with `size` already taken (with `min_one`, the first whatever
        its size); returns the new total size."""
        i = max(0, bisect.bisect_right(self._offsets, offset) - 1)
        first = min_one
        for item in self._entries[i:]:
            if item.base_offset >= end:
                break
            if item.last_offset >= offset:
                if not first and size + item.entry.size > max_bytes:
                    break
                first = False
                out.append(item)
                size += item.entry.size
        return size

    def close(self) -> None:
        self.clear()
        self._budget.unregister(self)
