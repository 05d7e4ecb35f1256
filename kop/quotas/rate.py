"""A rate over a sliding window of samples, and the throttle time that brings an
observed rate back to its bound: Kafka's `Rate` over `SampledStat` and its
`QuotaUtils.throttleTime`, with its defaults (`quota.window.num` 11 samples of
`quota.window.size.seconds` 1)."""

from __future__ import annotations

from collections import deque

SAMPLES = 11
WINDOW_S = 1.0


class Rate:
    __slots__ = ("_count", "_samples", "_window_s", "last_s")

    def __init__(self, samples: int = SAMPLES, window_s: float = WINDOW_S) -> None:
        self._samples: deque[list[float]] = deque()  # [start, total] per sample, oldest first
        self._window_s = window_s
        self._count = samples
        self.last_s = 0.0  # when something was last recorded

    def record(self, amount: float, now: float) -> None:
        self.last_s = now
        if not self._samples or now - self._samples[-1][0] >= self._window_s:
            self._samples.append([now, 0.0])
            if len(self._samples) > self._count:
                self._samples.popleft()
        self._samples[-1][1] += amount

    def measure(self, now: float) -> float:
        """Per second, over the samples still in the window."""
        horizon = now - self._count * self._window_s
        total = sum(amount for start, amount in self._samples if start > horizon)
        return total / self.window_s(now)

    def window_s(self, now: float) -> float:
        """The time the rate is over: since the oldest sample kept, but never less
        than all samples but one (a new client's first burst is averaged as Kafka
        averages it, not taken as an instant rate)."""
        elapsed = now - self._samples[0][0] if self._samples else 0.0
        return max(elapsed, (self._count - 1) * self._window_s)

    def throttle_s(self, bound: float, now: float) -> float:
        """How long the client must wait for its rate to come back to `bound`: 0 when
        within it; at most the whole window (Kafka's bound on throttle time)."""
        over = self.measure(now) - bound
        if over <= 0:
            return 0.0
        return min(over / bound * self.window_s(now), self._count * self._window_s)
