"""Backoff between attempts: how the client rides out a topic being unloaded or a
broker restarting without hammering it."""

from __future__ import annotations

import random


class Backoff:
    """Exponential delays from `initial_s` doubling up to `max_s`, with jitter so the
    producers and readers of one lost connection do not come back in lockstep."""

    def __init__(self, initial_s: float = 0.05, max_s: float = 5.0) -> None:
        self._initial = initial_s
        self._max = max_s
        self._next = initial_s

    def next(self) -> float:
        delay = self._next
        self._next = min(self._max, self._next * 2)
        return delay * random.uniform(0.8, 1.2)

    def reset(self) -> None:
        self._next = self._initial
