"""Several members of one consumer group at once, each polling in its own thread
(as separate applications would), so scenarios can watch assignments change as
members join and leave."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

Assigned = frozenset[int]


class MemberLoop(Protocol):
    def __call__(
        self, bootstrap: str, topic: str, group: str, stop: threading.Event,
        report: Callable[[Assigned], None],
    ) -> None:  # fmt: skip
        """Be a member of `group` subscribed to `topic`, polling until `stop` is set,
        calling `report` with the current assignment after each poll; then leave."""
        ...


class Member:
    def __init__(self, loop: MemberLoop, bootstrap: str, topic: str, group: str) -> None:
        self.assigned: Assigned = frozenset()
        self.error: str | None = None
        self._stop = threading.Event()

        def run() -> None:
            try:
                loop(bootstrap, topic, group, self._stop, self._report)
            except Exception as exc:  # shown in the observation
                self.error = f"{type(exc).__name__}: {exc}"

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def _report(self, assigned: Assigned) -> None:
        self.assigned = assigned

    def leave(self, within: float = 60.0) -> None:
        self._stop.set()
        self._thread.join(within)


def settle(members: list[Member], partitions: int, within: float = 60.0) -> list[list[int]] | str:
    """Each member's partitions once every partition is assigned exactly once and each
    member has some (members in start order); or what was seen when time ran out."""
    deadline = time.monotonic() + within
    while True:
        seen = [sorted(m.assigned) for m in members]
        flat = [p for s in seen for p in s]
        if sorted(flat) == list(range(partitions)) and all(seen):
            return seen
        errors = [m.error for m in members if m.error]
        if errors or time.monotonic() > deadline:
            return f"not settled: {seen} {errors}"
        time.sleep(0.2)
