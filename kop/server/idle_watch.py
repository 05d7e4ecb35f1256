"""A connection's idle timeout (`connections.max.idle.ms`) kept with one timer per
timeout period instead of one per request.

The timeout runs only while the connection waits for its next request, and a client
sends thousands of requests a second: an `asyncio.timeout` around each wait made and
cancelled a timer (and a Timeout object, and a look at the current task) per request.
Here a wait only notes when it began; the one timer, when it fires, looks at whether
a wait is still going on and since when, and either expires the connection or sleeps
until that wait's own deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kop.server.ports import FrameSource

# A timer may fire a little before its time (the loop's clock resolution): within
# this of the deadline counts as reached, rather than arming another timer for
# microseconds.
_SLACK_S = 0.005


class IdleWatch:
    def __init__(self, timeout_s: float, expired: Callable[[], None]) -> None:
        self._timeout_s = timeout_s
        self._expired = expired
        self._since: float | None = None  # when the current wait began (None: no wait)
        self._timer: asyncio.TimerHandle | None = None
        self.fired = False

    async def read(self, source: FrameSource) -> bytes | memoryview | None:
        """The source's next frame, or None at its end; None too once the timeout
        fired (`fired`), even if the stream ended inside a frame then."""
        self.waiting()
        try:
            return await source.next_frame()
        except ConnectionResetError:
            if not self.fired:
                raise
            return None
        finally:
            self.done()

    def waiting(self) -> None:
        """A wait for the next request begins."""
        loop = asyncio.get_running_loop()
        self._since = loop.time()
        if self._timer is None and not self.fired:
            self._timer = loop.call_at(self._since + self._timeout_s, self._check)

    def done(self) -> None:
        """The wait ended (a request came, or the stream ended)."""
        self._since = None

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        since = self._since
        if since is None:
            return  # not waiting: the next wait arms the timer again
        loop = asyncio.get_running_loop()
        due = since + self._timeout_s
        if loop.time() < due - _SLACK_S:
            self._timer = loop.call_at(due, self._check)
            return
        self.fired = True
        self._expired()
