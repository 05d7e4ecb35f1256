"""What decides when a request stream's socket is read: the reasons it is muted, the
deadline of the frame under way, and what the kernel already holds for it."""

from __future__ import annotations

import asyncio
import fcntl
import struct
import termios
from collections.abc import Callable

_INT = struct.Struct("i")
_INT_ZERO = bytes(_INT.size)


class Muting:
    """Why a socket is not read (Kafka "mutes" the channel); read again once no
    reason is left."""

    AHEAD, MEMORY, ANSWERS, STOPPED = 1, 2, 4, 8

    def __init__(self) -> None:
        self.reasons = 0
        self.transport: asyncio.Transport | None = None  # None once the socket is gone

    def add(self, reason: int) -> None:
        if not self.reasons and self.transport is not None:
            self.transport.pause_reading()
        self.reasons |= reason

    def remove(self, reason: int) -> None:
        if not self.reasons & reason:
            return
        self.reasons &= ~reason
        if not self.reasons and self.transport is not None:
            self.transport.resume_reading()


class ReceiveDeadline:
    """A frame under way (its first byte arrived) must be whole within `timeout_s`;
    a frame that arrives whole within one receive never needs a deadline. One timer
    per connection, re-armed for the frame under way when it fires, not one per frame
    (that cost about 40% more CPU per 40 KB frame).

    While the frame waits for request memory kop does not read it, so its sender
    cannot be late: the deadline is held, and runs in full from the grant (a waiter
    holds no memory, only its kernel buffers)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, timeout_s: float, expired: Callable[[], None]
    ) -> None:
        self._loop = loop
        self.timeout_s = timeout_s
        self._expired = expired
        self._timer: asyncio.TimerHandle | None = None
        self._frame = -1  # the frame under way (by number) ...
        self._since = -1.0  # ... and when its first byte came (-1: none)
        self._held = False

    def watch(self, under_way: bool, frame: int) -> None:
        """After a receive: whether a frame is under way, and which."""
        if not under_way:
            self._since = -1.0
        elif self._frame != frame or self._since < 0:
            self._frame, self._since = frame, self._loop.time()
            if self._timer is None:
                self._timer = self._loop.call_at(self._since + self.timeout_s, self._check)

    def hold(self) -> None:
        """The frame waits for memory: not late while it does."""
        self._held = True

    def resume(self) -> None:
        """Memory given: the frame has `timeout_s` from now."""
        self._held = False
        if self._since >= 0:
            self._since = self._loop.time()
            if self._timer is None:
                self._timer = self._loop.call_at(self._since + self.timeout_s, self._check)

    def cancel(self) -> None:
        self._since = -1.0
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        if self._since < 0 or self._held:
            return
        due = self._since + self.timeout_s
        if self._loop.time() < due:
            self._timer = self._loop.call_at(due, self._check)
        else:
            self._since = -1.0
            self._expired()


def kernel_holds(fd: int) -> int:
    """Bytes the kernel holds for a socket: what has arrived, not yet received."""
    if fd < 0:
        return 0
    try:
        return int(_INT.unpack(fcntl.ioctl(fd, termios.FIONREAD, _INT_ZERO))[0])
    except OSError:
        return 0
