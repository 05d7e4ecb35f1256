"""What a connection leaves behind when it ends: state a handler opened for the
connection's client that nobody else would ever close. Kafka ties a share session to
the connection that opened it and drops it (releasing what its member acquired) when
that connection closes; without that, a client that vanishes keeps its session's slot
until the instance restarts and its records until their locks expire.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable

log = logging.getLogger(__name__)

End = Callable[[], Awaitable[None]]


class ConnectionEnds:
    """One per connection: an end per key (a later `add` of a key replaces the
    earlier), so what it holds is bounded by what the client holds open."""

    def __init__(self) -> None:
        self._ends: dict[Hashable, End] = {}

    def __len__(self) -> int:
        return len(self._ends)

    def add(self, key: Hashable, end: End) -> None:
        self._ends[key] = end

    def discard(self, key: Hashable) -> None:
        """The client closed it itself: nothing is left to do at the end."""
        self._ends.pop(key, None)

    async def run(self) -> None:
        """Each end once, in the order added; one that fails is logged and the rest
        still run (a connection's end must not be cut short by one of them)."""
        ends, self._ends = self._ends, {}
        for key, end in ends.items():
            try:
                await end()
            except Exception:
                log.exception("ending %r of a closed connection", key)
