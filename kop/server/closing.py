"""Why kop closes a connection, and logging it without letting a flood of hostile
connections flood the log as well."""

from __future__ import annotations

import logging
import time

# The reasons kop closes a connection itself (metric label values).
MAX_CONNECTIONS = "max_connections"
MAX_CONNECTIONS_PER_IP = "max_connections_per_ip"  # its address holds its cap already
CONNECTION_RATE = "connection_rate"  # its address opens them faster than allowed
SETUP_TIMEOUT = "setup_timeout"  # no whole request (or no SASL authentication) in time
IDLE = "idle"
RECEIVE_TIMEOUT = "receive_timeout"
SEND_TIMEOUT = "send_timeout"
FRAME_TOO_LARGE = "frame_too_large"
BAD_REQUEST = "bad_request"
EVICTED = "evicted"  # held memory others waited for, and made no progress
UNAUTHENTICATED = "unauthenticated"  # a request before SASL, or a refused SASL exchange
SESSION_EXPIRED = "session_expired"  # a SASL session that was not re-authenticated in time
# Logged the same way, but the connection stays open: answered INVALID_REQUEST.
INVALID = "invalid_request"


class ThrottledLog:
    """One line per reason at most every `every_s` seconds, counting the ones left out."""

    def __init__(self, log: logging.Logger, every_s: float = 10.0) -> None:
        self._log = log
        self._every_s = every_s
        self._last: dict[str, float] = {}
        self._skipped: dict[str, int] = {}

    def __call__(self, level: int, reason: str, msg: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last.get(reason, -self._every_s) < self._every_s:
            self._skipped[reason] = self._skipped.get(reason, 0) + 1
            return
        self._last[reason] = now
        skipped = self._skipped.pop(reason, 0)
        if skipped:
            msg += f" (and {skipped} more for {reason} in the last {self._every_s:.0f}s)"
        self._log.log(level, msg, *args)
