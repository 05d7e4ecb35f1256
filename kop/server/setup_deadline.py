"""A connection's set-up deadline (issue 33): from accept, a TLS handshake included, to
its first whole request, or on a SASL listener to authentication. A silent socket
otherwise held a connection slot for the idle timeout (600 s), and `max_connections`
of them locked every tenant out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class SetupDeadline:
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._accepted = time.monotonic()  # made at accept
        self._timer: asyncio.TimerHandle | None = None

    def arm(self, expired: Callable[[], None]) -> None:
        """`expired()` once the deadline passes, unless `met()` first."""
        left = self._accepted + self.timeout_s - time.monotonic()
        self._timer = asyncio.get_running_loop().call_later(max(0.0, left), self._fire, expired)

    def met(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self, expired: Callable[[], None]) -> None:
        self._timer = None
        expired()
