"""Keeping a copy of what Pulsar holds fresh: read again every interval, the copy kept
when Pulsar is away (an instance keeps enforcing what it last knew)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def refresh_every(refresh: Callable[[], Awaitable[None]], every_s: float, what: str) -> None:
    """Runs `refresh` now and every `every_s` until cancelled; a failure is a warning."""
    while True:
        try:
            await refresh()
        except Exception as exc:  # Pulsar away: keep what is known, try again
            log.warning("%s not refreshed: %s", what, exc)
        await asyncio.sleep(every_s)
