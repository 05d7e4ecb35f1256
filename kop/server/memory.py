"""Memory shared by all connections: request bytes being received or queued, and
answer bytes not yet sent. Each is a budget in total across connections (Kafka's
`queued.max.request.bytes` is the model for the first)."""

from __future__ import annotations

import collections
from collections.abc import Callable

Wake = Callable[[], None]


class RequestMemory:
    """Bytes of large request frames held: received in part, or whole and not yet
    dispatched. Connections ask before they allocate; one that cannot have what it
    asks for stops reading its socket and waits, first come first served.

    Deadlock: frames that each wait for memory held by the others would never finish.
    So one frame at a time may take the budget past its limit (an overdraft, as
    Kafka's non-strict pool allows): the first waiter when the budget is not over its
    limit. It always finishes (or its connection is closed at the receive deadline),
    and no other overdraft starts until the budget is back within its limit, so
    `used <= limit + max_request_bytes` always.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._waiting: collections.OrderedDict[object, tuple[int, Wake]] = collections.OrderedDict()
        self._overdrawn: object | None = None  # whose frame may pass the limit now

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def take(self, owner: object, nbytes: int, wake: Wake) -> bool:
        """True when `nbytes` are `owner`'s now; otherwise `owner` waits and `wake`
        is called once they are (never from within this call)."""
        if owner is self._overdrawn or (not self._waiting and self._fits(owner, nbytes)):
            self._charge(owner, nbytes)
            return True
        self._waiting[owner] = (nbytes, wake)
        return False

    def finished(self, owner: object) -> None:
        """`owner`'s frame is whole: its overdraft, if it had one, ends."""
        if owner is self._overdrawn:
            self._overdrawn = None
            self._grant()

    def release(self, nbytes: int) -> None:
        self.used -= nbytes
        self._grant()

    def forget(self, owner: object) -> None:
        """`owner` is gone (it releases what it held itself)."""
        self._waiting.pop(owner, None)
        self.finished(owner)

    def _fits(self, owner: object, nbytes: int) -> bool:
        if self.used + nbytes <= self.limit or owner is self._overdrawn:
            return True
        return self._overdrawn is None and self.used <= self.limit

    def _charge(self, owner: object, nbytes: int) -> None:
        self.used += nbytes
        if self.used > self.limit and self._overdrawn is None:
            self._overdrawn = owner

    def _grant(self) -> None:
        while self._waiting:
            owner, (nbytes, wake) = next(iter(self._waiting.items()))
            if not self._fits(owner, nbytes):
                return
            del self._waiting[owner]
            self._charge(owner, nbytes)
            wake()


class AnswerMemory:
    """Bytes of answers made and not yet handed to the kernel. A Fetch claims room
    before it reads records (and gets less, or none, while the budget is spent); every
    answer is charged once encoded and released once the socket took it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def claim(self, want: int, floor: int) -> int:
        """Up to `want` bytes; 0 unless at least min(want, floor) are free, so a
        claim is not a trickle of small answers either."""
        room = min(want, self.limit - self.used)
        if room < min(want, floor):
            return 0
        self.used += room
        return room

    def charge(self, nbytes: int) -> None:
        self.used += nbytes

    def release(self, nbytes: int) -> None:
        self.used -= nbytes
