"""Read-ahead bounded in bytes, in total across readers (like the Java client's
`memoryLimitBytes`).

Pulsar's flow control counts messages (FLOW grants permits), never bytes, so a
count alone lets one reader of 1 MiB entries fetch a gigabyte ahead. Here every
reader of a client draws on one `ReadAheadBudget`: the bytes it has received and
not yet handed on (`held`), plus what the permits it granted may still bring
(`reserved`: outstanding permits times the reader's estimate of a message's
size). A reader grants permits only while the budget has room, so the sum stays
near the limit; it learns sizes from what arrives, starting with a single permit
(a probe) when it knows none yet. A reader with nothing queued and no permit out
always gets one permit, so no reader starves however full the budget is: the
bound is the limit plus one entry per such reader.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_READ_AHEAD_BYTES = 256 << 20

# What a message is assumed to weigh at least: keeps a reader of tiny messages
# from reserving nothing for a thousand permits.
_MIN_ESTIMATE = 1024
# A reader may reserve at most this fraction of the budget (1/_SHARES).
_SHARES = 8
# What a received message costs besides its payload (its Frame, metadata objects).
FRAME_OVERHEAD = 256


@dataclass(slots=True)
class ReadAheadBudget:
    """Shared by all readers of one client; `held` and `reserved` are in bytes."""

    limit: int = DEFAULT_READ_AHEAD_BYTES
    held: int = 0
    reserved: int = 0
    peak_held: int = 0  # the most ever held at once, for measurements

    @property
    def room(self) -> int:
        return self.limit - self.held - self.reserved


class ReadAhead:
    """One reader's flow control: how many permits to grant, and its share of the
    budget. Pure bookkeeping; the reader sends the FLOW."""

    def __init__(self, budget: ReadAheadBudget, receiver_queue: int) -> None:
        self._budget = budget
        self._queue_limit = max(1, receiver_queue)
        self.outstanding = 0  # permits granted that the broker has not used yet
        self.held = 0  # this reader's bytes in `budget.held`
        self._reserved = 0  # this reader's bytes in `budget.reserved`
        self._estimate = 0  # bytes per permit; 0 = nothing seen yet

    def arrived(self, permits: int, size: int) -> None:
        """A message of `size` bytes used `permits` (a batch uses its message count);
        its bytes are held until `release`d. `outstanding` may go below zero, as the
        broker's count does: it sends a whole batch on its last permit, and sends
        again only once FLOWs have brought its count above zero."""
        self.outstanding -= permits
        per_permit = max(_MIN_ESTIMATE, size // max(1, permits))
        if per_permit >= self._estimate:
            self._estimate = per_permit  # up at once: an underestimate overshoots
        else:
            self._estimate -= (self._estimate - per_permit) // 8  # down slowly
        self.hold(size)
        self._reserve()

    def lost(self, permits: int) -> None:
        """A message arrived that cannot be used (a corrupt frame): its permits are
        used, and it says nothing about sizes."""
        self.outstanding -= permits
        self._reserve()

    def hold(self, size: int) -> None:
        self.held += size
        budget = self._budget
        budget.held += size
        if budget.held > budget.peak_held:
            budget.peak_held = budget.held

    def release(self, size: int) -> None:
        self.held -= size
        self._budget.held -= size

    def grant(self, queued_messages: int) -> int:
        """Permits to grant now (0: none), counted as outstanding once returned: what
        brings the broker's count to the target the queue and the budget allow,
        paying back any deficit a large batch left. Grants come in halves of the
        target, not one FLOW per message."""
        target = self._queue_limit - queued_messages
        if self._estimate == 0:
            target = min(target, 1)  # the probe
        else:
            room = self._budget.room + self._reserved
            # One reader's share at most: a caught-up reader of large entries would
            # otherwise reserve the whole budget for permits it may never use, and
            # every other reader would fetch one entry per round trip.
            share = self._budget.limit // _SHARES
            target = min(target, room // self._estimate, share // self._estimate)
        if queued_messages == 0:
            target = max(target, 1)  # never starve: an empty reader may fetch one entry
        permits = target - self.outstanding
        if permits <= 0 or (self.outstanding > 0 and permits < self.outstanding):
            return 0  # enough out, or not yet worth a FLOW
        self.outstanding += permits
        self._reserve()
        return permits

    def reset(self) -> None:
        """A new subscription: the broker holds none of our permits any more."""
        self.outstanding = 0
        self._reserve()

    def close(self) -> None:
        """Everything back to the budget."""
        self.outstanding = 0
        self._reserve()
        self.release(self.held)

    def _reserve(self) -> None:
        reserved = max(0, self.outstanding) * self._estimate
        self._budget.reserved += reserved - self._reserved
        self._reserved = reserved
