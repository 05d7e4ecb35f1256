"""Backoff between attempts: how the client rides out a topic being unloaded or a
broker restarting without hammering it."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

from kop.pulsar.wire.errors import ProducerFencedError, PulsarWireError


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


async def attach_until_closed(
    attach: Callable[[], Awaitable[None]],
    closed: Callable[[], bool],
    on_failed: Callable[[PulsarWireError], None],
    log: logging.Logger,
    what: str,
    timeout_s: float,
) -> None:
    """A producer's or reader's way back to its broker: `attach()` again after each
    backoff until it works or its owner closes; an error that says trying again cannot
    help goes to `on_failed` instead. Each attempt is cut after `timeout_s` (a lookup
    with redirects, a connect and a request each have a timeout of their own)."""
    backoff = Backoff()
    while not closed():
        await asyncio.sleep(backoff.next())
        try:
            async with asyncio.timeout(timeout_s):
                await attach()
            return
        except TimeoutError:
            log.info("%s: attaching again took over %ss", what, timeout_s)
        except PulsarWireError as exc:
            if not exc.retriable:
                # Fenced is another instance taking the topic over (its owner moved):
                # the owner hears it through on_failed; not an error of this instance.
                level = logging.WARNING if isinstance(exc, ProducerFencedError) else logging.ERROR
                log.log(level, "%s failed: %s", what, exc)
                on_failed(exc)
                return
            log.info("%s: attaching again failed: %s", what, exc)
