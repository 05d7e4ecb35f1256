"""Memory shared by all connections: request bytes being received or queued, and
answer bytes not yet sent. Each is a budget in total across connections (Kafka's
`queued.max.request.bytes` is the model for the first).

A budget can be held by clients that stopped halfway (a request sent in part, an
answer not read). Their deadlines (`request_receive_timeout_s`,
`response_send_timeout_s`) end that, but only after a minute; so while anyone waits
for a budget, the holders that made no progress for `EVICT_IDLE_S` are closed.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Container
from typing import Protocol

Wake = Callable[[], None]

# How long a holder may make no progress while others wait for its budget. Clients
# read and write continuously (the Java client's heartbeat thread polls its sockets
# every 3 s at least), so this only meets clients that stopped.
EVICT_IDLE_S = 5.0


class Holder(Protocol):
    def idle_since(self) -> float:
        """time.monotonic() of its last progress (a byte received, or sent)."""

    def evict(self) -> None:
        """Close the connection; it gives back what it holds once closed."""


class Holders:
    """Who holds part of a budget now, and the progress each made in getting it."""

    def __init__(self) -> None:
        self._held: dict[Holder, float] = {}

    def __len__(self) -> int:
        return len(self._held)

    def add(self, holder: Holder, granted: float = float("-inf")) -> None:
        """`granted`: when it was given memory it had waited for (that counts as
        progress, the wait not being its doing)."""
        self._held[holder] = max(granted, self._held.get(holder, granted))

    def discard(self, holder: object) -> None:
        self._held.pop(holder, None)  # type: ignore[call-overload]

    def evict_idle(self, now: float, exempt: Container[object] = ()) -> int:
        """Evicts the holders idle for EVICT_IDLE_S (but those `exempt`)."""
        idle = [
            h
            for h, granted in self._held.items()
            if h not in exempt and max(granted, h.idle_since()) <= now - EVICT_IDLE_S
        ]
        for holder in idle:
            del self._held[holder]
            holder.evict()
        return len(idle)


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

    Owners are `Holder`s while a frame of theirs holds memory; one that waits is not
    idle by its own doing and is never evicted.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.holders = Holders()
        self._waiting: collections.OrderedDict[Holder, tuple[int, Wake]] = collections.OrderedDict()
        self._overdrawn: object | None = None  # whose frame may pass the limit now

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def take(self, owner: Holder, nbytes: int, wake: Wake) -> bool:
        """True when `nbytes` are `owner`'s now; otherwise `owner` waits and `wake`
        is called once they are (never from within this call)."""
        if owner is self._overdrawn or (not self._waiting and self._fits(owner, nbytes)):
            self._charge(owner, nbytes)
            return True
        self._waiting[owner] = (nbytes, wake)
        self.evict_idle()
        return False

    def force(self, owner: Holder, nbytes: int) -> None:
        """`nbytes` are `owner`'s now, whatever the budget (it no longer waits)."""
        self._waiting.pop(owner, None)
        self._charge(owner, nbytes)

    def evict_idle(self) -> int:
        """While anyone waits: evicts the holders idle for EVICT_IDLE_S. Called when
        a take fails, and by a waiter again after that long."""
        if not self._waiting:
            return 0
        return self.holders.evict_idle(time.monotonic(), exempt=self._waiting)

    def finished(self, owner: Holder) -> None:
        """`owner`'s frame is whole: its overdraft, if it had one, ends."""
        self.holders.discard(owner)
        if owner is self._overdrawn:
            self._overdrawn = None
            self._grant()

    def release(self, nbytes: int) -> None:
        self.used -= nbytes
        self._grant()

    def forget(self, owner: Holder) -> None:
        """`owner` is gone (it releases what it held itself)."""
        self._waiting.pop(owner, None)
        self.finished(owner)

    def _fits(self, owner: object, nbytes: int) -> bool:
        if self.used + nbytes <= self.limit or owner is self._overdrawn:
            return True
        return self._overdrawn is None and self.used <= self.limit

    def _charge(self, owner: Holder, nbytes: int, granted: float = float("-inf")) -> None:
        self.used += nbytes
        self.holders.add(owner, granted)
        if self.used > self.limit and self._overdrawn is None:
            self._overdrawn = owner

    def _grant(self) -> None:
        while self._waiting:
            owner, (nbytes, wake) = next(iter(self._waiting.items()))
            if not self._fits(owner, nbytes):
                return
            del self._waiting[owner]
            # Muted while it waited, it has had no chance to read yet: not idle now.
            self._charge(owner, nbytes, granted=time.monotonic())
            wake()


class AnswerMemory:
    """Bytes of answers made and not yet handed to the kernel. A Fetch claims room
    before it reads records (and gets less, or none, while the budget is spent); every
    answer is charged once encoded and released once the socket took it. Answers
    being sent are `holders`; a claim that fails evicts those idle (at most every
    half second: fetches under pressure ask again and again)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.holders = Holders()
        self._scanned = -1.0
        self.denied = 0  # claims refused for want of room, since start
        self._freed: list[asyncio.Future[None]] = []

    def claim(self, want: int, floor: int) -> int:
        """Up to `want` bytes; 0 unless at least min(want, floor) are free, so a
        claim is not a trickle of small answers either."""
        room = min(want, self.limit - self.used)
        if room < min(want, floor):
            now = time.monotonic()
            if now - self._scanned >= 0.5:
                self._scanned = now
                self.holders.evict_idle(now)
            self.denied += 1
            return 0
        self.used += room
        return room

    def charge(self, nbytes: int) -> None:
        self.used += nbytes

    def release(self, nbytes: int) -> None:
        self.used -= nbytes
        if nbytes > 0 and self._freed:
            freed, self._freed = self._freed, []
            for fut in freed:
                if not fut.done():
                    fut.set_result(None)

    def freed(self) -> asyncio.Future[None]:
        """Resolved when bytes are next given back: a fetch refused room waits on it
        (besides new data), so it reads what is there as soon as it can."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._freed = [f for f in self._freed if not f.done()]  # abandoned waits
        self._freed.append(fut)
        return fut
