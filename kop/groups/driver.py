"""The pure coordinator at work on the event loop: parked requests become
awaitables, Store effects become writes to the offsets store (their outcome fed
back), and a timer task ticks the coordinator by its next deadline.

The timer task is woken only when a call made the next deadline earlier; a
heartbeat, which only moves a deadline later, costs no wake-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from kop.groups.coordinator import PARKED, Coordinator
from kop.groups.offsets_store import OffsetsStore
from kop.groups.parked import Parked
from kop.groups.rebalance import Answer, JoinResult, Store, SyncResult
from kop.protocol.errors import ErrorCode
from kop.storage.types import StorageError

log = logging.getLogger(__name__)

R = TypeVar("R", JoinResult, SyncResult)
T = TypeVar("T")
IDLE_WAKE_S = 60.0  # the timer task's longest sleep: housekeeping runs at least this often


class Driver:
    def __init__(
        self,
        coordinator: Coordinator,
        store: OffsetsStore,
        clock: Callable[[], int],
        on_store_failed: Callable[[str, StorageError], object] = lambda _g, _e: None,
    ) -> None:
        self.coordinator = coordinator
        self.clock = clock
        self._store = store
        self._on_store_failed = on_store_failed  # told which group's record failed, and why
        self._parked = Parked()
        self._wake = asyncio.Event()
        self._sleeping_until: int | None = None  # the deadline the timer task waits for
        self._tasks: set[asyncio.Task[None]] = set()

    async def parked(self, call: Callable[[object, int], R | None]) -> R:
        """A call that may park: its answer now, or when the coordinator gives it."""
        token, fut = self._parked.park()
        result = call(token, self.clock())
        self._after()
        if result is not PARKED:
            self._parked.forget(token)
            return result
        return await self._parked.wait(token, fut)  # type: ignore[return-value]

    def now(self, call: Callable[[int], T]) -> T:
        """A call answered at once."""
        result = call(self.clock())
        self._after()
        return result

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def replan(self) -> None:
        """Wake the timer task to look at the deadlines again (after a reload)."""
        self._wake.set()

    async def run_timers(self, housekeeping: Callable[[int], Awaitable[None]]) -> None:
        while True:
            deadline = self.coordinator.next_deadline()
            self._sleeping_until = deadline
            wait = IDLE_WAKE_S
            if deadline is not None:
                wait = min(wait, max(0.0, (deadline - self.clock()) / 1000))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wake.wait()
            now = self.clock()
            self.coordinator.tick(now)
            self._after()
            await housekeeping(now)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._parked.answer_all(JoinResult(ErrorCode.coordinator_not_available, ""))

    def _after(self) -> None:
        """Deliver what the last call produced; wake the timers if it brought a
        deadline forward."""
        for effect in self.coordinator.take_effects():
            if isinstance(effect, Answer):
                self._parked.answer(effect.token, effect.result)
            elif isinstance(effect, Store):
                self.spawn(self._store_group(effect), f"store:{effect.metadata.group_id}")
        deadline = self.coordinator.next_deadline()
        if deadline is not None and (
            self._sleeping_until is None or deadline < self._sleeping_until
        ):
            self._wake.set()

    async def _store_group(self, effect: Store) -> None:
        try:
            await self._store.store_group(effect.metadata)
            ok = True
        except StorageError as exc:
            log.warning("group %s not persisted: %s", effect.metadata.group_id, exc)
            self._on_store_failed(effect.metadata.group_id, exc)
            ok = False
        self.coordinator.stored(effect.metadata, ok, self.clock())
        self._after()
