"""Whether this instance may judge the others' silence, and whether it must start over.

Both follow from when its own beats last came back through the members topic. While
they come back, the topic works, so a member that stays silent is gone. While they do
not, this instance cannot tell a dead peer from a dead topic (a Pulsar broker that
held the topic was killed, and Pulsar has not moved it yet): it judges nobody,
itself included, and keeps serving; Pulsar's fences, not this view, keep a stale
owner from having a write acknowledged (kop.cluster).

When its beats come back after more than a TTL, what it does depends on the others.
If another member kept beating through most of that gap, that member may have dropped
this one and taken over its partitions and groups: whatever this instance holds may
be stale, so it lets go of everything and takes its share back (`Resume.LAPSED`). If
nobody beat through it, nobody can have dropped it (`Resume.FROZEN`): it goes on.
"""

from __future__ import annotations

import enum


class Resume(enum.Enum):
    IN_TIME = "in time"
    FROZEN = "frozen"  # this one judged nobody for a while; nobody can have dropped it
    LAPSED = "lapsed"  # others beat through a gap past the TTL: they may have taken over


class Lease:
    def __init__(self, interval_s: float, ttl_s: float, now: float) -> None:
        self._interval_s = interval_s
        self._ttl_s = ttl_s
        self.confirmed_at = now  # loop time this instance last heard its own beat
        # Publish times (ms) of each other member's first and last beat since then.
        self._heard: dict[int, tuple[int, int]] = {}

    def healthy(self, now: float) -> bool:
        """Own beats come back: silence is then the silent member's own. Two intervals,
        not one: a beat may come back just after the next is due."""
        return now - self.confirmed_at <= 2 * self._interval_s

    def heard_other(self, node: int, published_ms: int, joining: bool = False) -> None:
        """Another member's beat. One that joins judges at once by the age of this
        one's last beat, so its beat counts as a whole TTL of beating."""
        start = published_ms - int(self._ttl_s * 1000) if joining else published_ms
        first = min(start, self._heard.get(node, (start, start))[0])
        self._heard[node] = (first, published_ms)

    def confirmed(self, now: float) -> Resume:
        """This instance heard its own beat: how it resumes."""
        gap = now - self.confirmed_at
        self.confirmed_at = now
        heard, self._heard = self._heard, {}
        if gap <= 2 * self._interval_s:
            return Resume.IN_TIME
        if gap <= self._ttl_s or not heard:
            return Resume.FROZEN
        # A member drops this one once its own beats have come back for a TTL past
        # this one's last (less up to three intervals: its first beat in the gap may
        # come an interval late, its judgement up to two intervals after its last
        # beat came back). Any member whose beats span that much may have.
        spans = max(last - first for first, last in heard.values()) / 1000
        return Resume.LAPSED if spans >= self._ttl_s - 3 * self._interval_s else Resume.FROZEN
