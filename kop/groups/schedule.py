"""When the coordinator next has a timeout to fire, without looking at every group
on every call.

Each call marks the group it touched; only those are re-planned. A heap holds each
group's earliest deadline. A heartbeat moves a deadline later without a new heap
entry, so an entry may come due early: the group is then checked (nothing fires)
and planned again. An entry is never late, because only a call that touches a
group can make its deadlines earlier.
"""

from __future__ import annotations

import heapq

from kop.groups.group import Group
from kop.groups.timers import deadlines


class Schedule:
    def __init__(self, groups: dict[str, Group]) -> None:
        self._groups = groups
        self._heap: list[tuple[int, str]] = []
        self._planned: dict[str, int] = {}  # group -> the earliest time it is in the heap for
        self._touched: set[str] = set()

    def touch(self, group_id: str) -> None:
        self._touched.add(group_id)

    def next_deadline(self) -> int | None:
        self._plan()
        return self._heap[0][0] if self._heap else None

    def due(self, now_ms: int) -> list[str]:
        """The groups with something due by `now_ms`; they are planned again after."""
        self._plan()
        out: dict[str, None] = {}
        while self._heap and self._heap[0][0] <= now_ms:
            at, group_id = heapq.heappop(self._heap)
            if self._planned.get(group_id) == at:
                del self._planned[group_id]
            out[group_id] = None
        self._touched.update(out)
        return [g for g in out if g in self._groups]

    def _plan(self) -> None:
        for group_id in self._touched:
            g = self._groups.get(group_id)
            times = deadlines(g) if g is not None else []
            if not times:
                continue
            at = min(times)
            if at < self._planned.get(group_id, at + 1):
                self._planned[group_id] = at
                heapq.heappush(self._heap, (at, group_id))
        self._touched.clear()
