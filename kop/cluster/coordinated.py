"""The partitions of a coordinator's state topic this instance coordinates (the
offsets topic's for groups, the transaction state topic's for transactional ids), as
Kafka's CoordinatorRuntime holds its `__consumer_offsets` partitions: one is loaded
when this instance comes to own it (its keys answer COORDINATOR_LOAD_IN_PROGRESS
meanwhile), unloaded when it no longer does (their requests get NOT_COORDINATOR, so
clients look the coordinator up again). Loading retries with back-off while the
storage fails. A partition whose writer was fenced (another instance took it while
this one still believed it owned it) is unloaded too, and not taken again until the
view of the instances changes: taking it back would fence the rightful owner in turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from kop.aio.futures import cancel_and_wait
from kop.cluster.ownership import Ownership
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.types import StorageError

log = logging.getLogger(__name__)


class CoordinatedPartitions:
    def __init__(
        self,
        count: int,
        key: Callable[[int], str],
        load: Callable[[int], Awaitable[None]],
        unload: Callable[[int], Awaitable[None]],
        what: str = "offsets partition",
    ) -> None:
        self._what = what  # for the log: "offsets partition", "transaction state partition"
        self._count = count
        self._key = key  # partition -> the ownership key (its Pulsar partition topic)
        self._load = load
        self._unload = unload
        self.loaded: set[int] = set()
        self._loading: dict[int, asyncio.Task[None]] = {}
        self._wanted: set[int] | None = None  # owned, as last seen (None: not looked yet)
        self._fenced: set[int] = set()  # lost to a fence since the view last changed
        self._poke = asyncio.Event()

    def check(self, partition: int) -> None:
        """Raise what Kafka answers for a group of `partition` that is not ready here."""
        if self._wanted is not None and partition not in self._wanted:
            raise KafkaError(ErrorCode.not_coordinator, "another instance coordinates it")
        if partition not in self.loaded:
            raise KafkaError(ErrorCode.coordinator_load_in_progress, f"{self._what} loading")

    @property
    def all_loaded(self) -> bool:
        """Every partition this instance owns is loaded."""
        return self._wanted is not None and self._wanted <= self.loaded

    def coordinates(self, partition: int) -> bool:
        return partition in self.loaded

    def elsewhere(self, partition: int) -> bool:
        """Another instance owns the partition, as last seen (not while this one has
        yet to look: a partition may be loading here then)."""
        return self._wanted is not None and partition not in self._wanted

    def fenced(self, partition: int) -> None:
        """Another instance took the partition over: let it go."""
        if partition not in self._fenced:
            log.warning("%s %d was taken over by another instance", self._what, partition)
            self._fenced.add(partition)
            self._poke.set()

    async def follow(self, ownership: Ownership) -> None:
        """Load and unload as the ownership view changes, until cancelled."""
        version = ownership.version
        try:
            while True:
                owned = {p for p in range(self._count) if ownership.mine(self._key(p))}
                await self._settle(owned - self._fenced)
                changed = asyncio.ensure_future(ownership.changed(version))
                poked = asyncio.ensure_future(self._poke.wait())
                try:
                    await asyncio.wait((changed, poked), return_when=asyncio.FIRST_COMPLETED)
                finally:  # both waited for: a task left cancelling outlives its loop
                    changed.cancel()
                    poked.cancel()
                    await asyncio.gather(changed, poked, return_exceptions=True)
                self._poke.clear()
                if ownership.version != version:
                    version = ownership.version
                    self._fenced.clear()
        finally:
            for task in self._loading.values():
                task.cancel()

    async def _settle(self, wanted: set[int]) -> None:
        self._wanted = wanted
        for p in sorted((self.loaded | set(self._loading)) - wanted):
            task = self._loading.pop(p, None)
            if task is not None:
                await cancel_and_wait(task)
            self.loaded.discard(p)
            await self._unload(p)
        for p in sorted(wanted - self.loaded - set(self._loading)):
            self._loading[p] = asyncio.create_task(self._load_until_done(p), name=f"load:{p}")

    async def _load_until_done(self, partition: int) -> None:
        backoff = 0.5
        while True:
            try:
                await self._load(partition)
                break
            except StorageError as exc:
                log.warning(
                    "loading %s %d failed (%s); again in %.1fs",
                    self._what, partition, exc, backoff,
                )  # fmt: skip
            except Exception:  # never left unloaded: its keys would wait forever
                log.exception("loading %s %d; again in %.1fs", self._what, partition, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 10.0)
        self._loading.pop(partition, None)
        self.loaded.add(partition)
