"""The offset model: dense Kafka offsets as a pure function of the Pulsar log.

The offset of a record is the number of Kafka records before it in its
partition. The index assigns offsets to messages in log order and keeps
sparse checkpoints `(offset, position)` at entry starts, so counting can
resume from a checkpoint instead of the beginning. Pure: no I/O.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from kop.storage.types import Position


@dataclass(frozen=True, slots=True, order=True)
class Checkpoint:
    """Message at `position` (an entry start) holds offset `offset`;
    `max_ts_before` is the largest timestamp of all records before it."""

    offset: int
    position: Position
    max_ts_before: int = -1


def is_entry_start(position: Position) -> bool:
    return position[2] <= 0


class OffsetIndex:
    def __init__(self, interval: int = 1000, checkpoints: list[Checkpoint] | None = None) -> None:
        self._interval = interval
        self._checkpoints: list[Checkpoint] = sorted(checkpoints or [])
        self._offsets = [c.offset for c in self._checkpoints]
        resume = self._checkpoints[-1] if self._checkpoints else None
        self.next_offset = resume.offset if resume else 0
        self.max_timestamp = resume.max_ts_before if resume else -1
        self._last_position: Position | None = None

    @property
    def resume_point(self) -> Checkpoint | None:
        """Where a tail reader starts: the last checkpoint (re-reading its entry)."""
        return self._checkpoints[-1] if self._checkpoints else None

    @property
    def checkpoints(self) -> list[Checkpoint]:
        return list(self._checkpoints)

    @property
    def log_start(self) -> int:
        return self._checkpoints[0].offset if self._checkpoints else self.next_offset

    def observe(
        self, position: Position, count: int, max_timestamp: int
    ) -> tuple[int, Checkpoint | None]:
        """Assign the base offset of the next message in log order.

        Returns the base offset and the checkpoint it created, if any. A message
        at or before the last one observed (a re-read after reconnecting) is a
        programming error upstream and raises.
        """
        if self._last_position is not None and position <= self._last_position:
            raise ValueError(f"position {position} is not after {self._last_position}")
        base = self.next_offset
        created: Checkpoint | None = None
        last = self._checkpoints[-1] if self._checkpoints else None
        if last is not None and last.position == position:
            if last.offset != base:
                raise ValueError(f"checkpoint {last} disagrees with count {base}")
        elif is_entry_start(position) and (last is None or base - last.offset >= self._interval):
            created = Checkpoint(base, position, self.max_timestamp)
            self._checkpoints.append(created)
            self._offsets.append(base)
        self._last_position = position
        self.next_offset = base + count
        self.max_timestamp = max(self.max_timestamp, max_timestamp)
        return base, created

    def floor(self, offset: int) -> Checkpoint | None:
        """The last checkpoint at or below `offset`: where a read of `offset` starts."""
        i = bisect.bisect_right(self._offsets, offset)
        return self._checkpoints[i - 1] if i else None

    def floor_for_time(self, timestamp: int) -> Checkpoint | None:
        """The last checkpoint before which no record reaches `timestamp`:
        a scan for the first record with timestamp >= `timestamp` starts here."""
        found: Checkpoint | None = None
        for c in self._checkpoints:
            if c.max_ts_before >= timestamp:
                break
            found = c
        return found
