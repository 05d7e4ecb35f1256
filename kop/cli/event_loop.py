"""The event loop kop serves on (`event_loop`, D29): uvloop, libuv under asyncio's
interface, by default; asyncio's own when asked, or when uvloop is not installed (a
platform without its wheels), with a warning. Everything kop does on the loop is
asyncio's public interface, so the choice changes speed, not behaviour."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger("kop")


def loop_factory(choice: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """What makes the loop (None: asyncio's default)."""
    if choice != "uvloop":
        return None
    try:
        import uvloop
    except ImportError:
        log.warning("event_loop=uvloop but uvloop is not installed: serving on asyncio's loop")
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, None], choice: str) -> None:
    with asyncio.Runner(loop_factory=loop_factory(choice)) as runner:
        runner.run(main)
