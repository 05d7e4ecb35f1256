"""The coordinator at work: runs the pure state machine on the event loop, turns
parked requests into awaitables, persists group records and commits through the
offsets store, fires timers, and reloads everything before answering.

Until the offsets topic is read back, group requests get
COORDINATOR_LOAD_IN_PROGRESS (retriable), as from a Kafka coordinator loading
its partitions. A commit is answered only after Pulsar persisted it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from kop.groups.coordinator import PARKED, Coordinator, JoinRequest, Limits
from kop.groups.mirror import SubscriptionMirror
from kop.groups.offsets import Offsets
from kop.groups.offsets_store import OffsetsStore
from kop.groups.parked import Parked
from kop.groups.rebalance import Answer, JoinResult, Store, SyncResult
from kop.groups.types import CommittedOffset, TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.types import StorageError

log = logging.getLogger(__name__)

R = TypeVar("R", JoinResult, SyncResult)


def wall_ms() -> int:
    return int(time.time() * 1000)


class GroupService:
    def __init__(
        self,
        store: OffsetsStore,
        limits: Limits | None = None,
        offsets_retention_ms: int = 7 * 24 * 3600 * 1000,
        clock: Callable[[], int] = wall_ms,
        mirror: SubscriptionMirror | None = None,
    ) -> None:
        self.coordinator = Coordinator(limits)
        self.offsets = Offsets(store, offsets_retention_ms, mirror)
        self.mirror = mirror
        self._store = store
        self._clock = clock
        self._parked = Parked()
        self._changed = asyncio.Event()
        self._loaded = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_commit: Callable[[float], None] = lambda _seconds: None  # metrics hook

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        self._spawn(self._load(), "groups-load")
        self._spawn(self._timers(), "groups-timers")
        if self.mirror is not None:
            self._spawn(self.mirror.run(), "groups-mirror")

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._parked.answer_all(JoinResult(ErrorCode.coordinator_not_available, ""))
        await self._store.close()

    @property
    def loaded(self) -> bool:
        return self._loaded

    def check_loaded(self) -> None:
        if not self._loaded:
            raise KafkaError(ErrorCode.coordinator_load_in_progress, "groups are loading")

    async def _load(self) -> None:
        backoff = 0.5
        while True:
            try:
                await load_groups(self._store, self.coordinator, self.offsets, self._clock())
                break
            except StorageError as exc:
                log.warning("loading consumer groups failed (%s); again in %.1fs", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
        self._loaded = True
        self._changed.set()
        log.info("consumer groups loaded: %d groups", len(self.coordinator.groups))

    # -- the group protocol ------------------------------------------------------------

    async def join(self, request: JoinRequest) -> JoinResult:
        self.check_loaded()
        token, fut = self._parked.park()
        result = self.coordinator.join(request, token, self._clock())
        return await self._outcome(token, fut, result)

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        self.check_loaded()
        token, fut = self._parked.park()
        result = self.coordinator.sync(
            group_id, generation, member_id, instance_id, assignments, token, self._clock()
        )
        return await self._outcome(token, fut, result)

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        self.check_loaded()
        code = self.coordinator.heartbeat(
            group_id, generation, member_id, instance_id, self._clock()
        )
        self._after()
        return code

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        self.check_loaded()
        codes = self.coordinator.leave(group_id, members, self._clock())
        self._after()
        return codes

    async def commit(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        offsets: dict[TopicPartition, CommittedOffset],
    ) -> ErrorCode:
        """One code for the whole request: Kafka stores a commit's offsets together."""
        self.check_loaded()
        now = self._clock()
        code = self.coordinator.commit_allowed(group_id, generation, member_id, instance_id, now)
        self._after()
        if code is not ErrorCode.none or not offsets:
            return code
        stamped = {tp: dataclasses.replace(o, commit_ms=now) for tp, o in offsets.items()}
        started = time.monotonic()
        try:
            await self.offsets.commit(group_id, stamped)
        except StorageError as exc:
            log.warning("commit of %s not persisted: %s", group_id, exc)
            return ErrorCode.coordinator_not_available
        self.on_commit(time.monotonic() - started)
        return ErrorCode.none

    async def delete(self, group_id: str) -> ErrorCode:
        self.check_loaded()
        code = self.coordinator.delete(group_id)
        if code is ErrorCode.group_id_not_found and self.offsets.of(group_id):
            code = ErrorCode.none  # a standalone group known only by its offsets
        if code is ErrorCode.none:
            try:
                await self.offsets.forget_group(group_id)
            except StorageError as exc:
                log.warning("deleting group %s not persisted: %s", group_id, exc)
                return ErrorCode.coordinator_not_available
        return code

    # -- plumbing -------------------------------------------------------------------------

    async def _outcome(
        self, token: object, fut: asyncio.Future[JoinResult | SyncResult], result: R | None
    ) -> R:
        if result is not PARKED:
            self._parked.forget(token)
            self._after()
            return result
        self._after()
        return await self._parked.wait(token, fut)  # type: ignore[return-value]

    def _after(self) -> None:
        """Deliver what the last call produced and let the timer task re-plan."""
        for effect in self.coordinator.take_effects():
            if isinstance(effect, Answer):
                self._parked.answer(effect.token, effect.result)
            elif isinstance(effect, Store):
                self._spawn(self._store_group(effect), f"store:{effect.metadata.group_id}")
        self._changed.set()

    async def _store_group(self, effect: Store) -> None:
        try:
            await self._store.store_group(effect.metadata)
            ok = True
        except StorageError as exc:
            log.warning("group %s not persisted: %s", effect.metadata.group_id, exc)
            ok = False
        self.coordinator.stored(effect.metadata, ok, self._clock())
        self._after()

    async def _timers(self) -> None:
        while True:
            deadline = self.coordinator.next_deadline()
            wait = None if deadline is None else max(0.0, (deadline - self._clock()) / 1000)
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(wait, 60.0) if wait is not None else 60.0):
                    await self._changed.wait()
            now = self._clock()
            self.coordinator.tick(now)
            self._after()
            for group in await self.offsets.expire(self.coordinator.groups, now):
                self.coordinator.groups.pop(group, None)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def load_groups(
    store: OffsetsStore, coordinator: Coordinator, offsets: Offsets, now_ms: int
) -> None:
    """Every partition of the offsets topic, side by side, into the coordinator."""
    everything = await asyncio.gather(*(store.load(p) for p in range(store.partitions)))
    for loaded in everything:
        for meta in loaded.groups.values():
            coordinator.restore(meta, now_ms)
        offsets.restore(loaded.offsets)
