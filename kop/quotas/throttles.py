"""What each client has used of its quotas, and how long it must wait.

One `Rate` per quota key and bucket (the clients sharing one quota, see
`entities.applied`); a bucket unused for the whole window is forgotten (its rate is
zero then), and at most `max_buckets` are kept: past that, the clients without one
share a single rate per key, so made-up client ids cannot grow kop's memory and
only throttle each other the sooner."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from kop.quotas.entities import Entity, applied
from kop.quotas.rate import SAMPLES, WINDOW_S, Rate

MAX_BUCKETS = 100_000
_OVERFLOW = ("\0", "\0")  # a bucket no user or client id can name


class Throttles:
    def __init__(
        self, max_buckets: int = MAX_BUCKETS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.quotas: Mapping[Entity, Mapping[str, float]] = {}
        self._rates: dict[tuple[str, tuple[str, str]], Rate] = {}
        self._max = max_buckets
        self._clock = clock
        self._swept = 0.0

    def charge(self, key: str, user: str, client_id: str, amount: float) -> float:
        """Record `amount` against the client's quota of `key`; the seconds it must
        wait now (0 without a quota, or within it)."""
        if not self.quotas:
            return 0.0
        quota = applied(self.quotas, user, client_id, key)
        if quota is None:
            return 0.0
        now = self._clock()
        rate = self._rate(key, quota.bucket, now)
        rate.record(amount, now)
        return rate.throttle_s(quota.bound, now)

    def owed(self, key: str, user: str, client_id: str) -> float:
        """The seconds the client must wait before anything more is charged."""
        quota = applied(self.quotas, user, client_id, key) if self.quotas else None
        if quota is None:
            return 0.0
        rate = self._rates.get((key, quota.bucket))
        return 0.0 if rate is None else rate.throttle_s(quota.bound, self._clock())

    def __len__(self) -> int:
        return len(self._rates)

    def _rate(self, key: str, bucket: tuple[str, str], now: float) -> Rate:
        rate = self._rates.get((key, bucket))
        if rate is not None:
            return rate
        if now - self._swept >= WINDOW_S:
            self._sweep(now)
        if len(self._rates) >= self._max:
            bucket = _OVERFLOW
            rate = self._rates.get((key, bucket))
            if rate is not None:
                return rate
        rate = self._rates[(key, bucket)] = Rate()
        return rate

    def _sweep(self, now: float) -> None:
        self._swept = now
        idle = now - SAMPLES * WINDOW_S
        for name in [n for n, r in self._rates.items() if r.last_s < idle]:
            del self._rates[name]
