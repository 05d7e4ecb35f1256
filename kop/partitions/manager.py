"""The partitions this instance serves: opened on first use, their indexes persisted.

Only partitions this instance owns are opened (`owns`, from kop.cluster.ownership);
one it no longer owns is let go (`release`, driven by kop.partitions.handover), and the
flusher is what lets the next owner resume. Memory budgets (tail buffers, kept
history readers) are shared by all partitions it serves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence

from kop.aio.futures import cancel_and_wait, side_by_side
from kop.log.checkpoint_store import CheckpointStore
from kop.log.framing import Framings
from kop.log.leader_epoch import EpochSource, FirstEpoch
from kop.log.partition_log import PartitionLog, Shared
from kop.log.settings import LogSettings
from kop.partitions.index_flusher import IndexFlusher
from kop.partitions.opener import PartitionOpener
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.port import Compaction, MessageLog
from kop.topics.catalog import TopicView

log = logging.getLogger(__name__)

_SIDE_BY_SIDE = 64  # partitions closed at once: each close waits on a Pulsar round trip


async def _side_by_side(calls: Iterable[Awaitable[None]]) -> None:
    await side_by_side(calls, _SIDE_BY_SIDE)


class LogManager:
    def __init__(
        self,
        storage: MessageLog,
        store: CheckpointStore,
        settings: LogSettings,
        flush_interval_s: float = 1.0,
        compaction: Compaction | None = None,
        owns: Callable[[str], bool] = lambda _topic: True,
        view: Callable[[], int] = lambda: 0,
        epochs: EpochSource | None = None,
        framings: Framings | None = None,
    ) -> None:
        self._storage = storage
        self._epochs: EpochSource = epochs or FirstEpoch()
        self.owns = owns
        self._view = view  # the version of the ownership view
        self._fenced: dict[str, int] = {}  # partition -> view version when it was fenced
        self._store = store
        self._settings = settings
        self._compaction = compaction
        self.shared = Shared.for_settings(settings)
        self.stats = self.shared.stats
        self._logs: dict[str, PartitionLog] = {}
        self._opener = PartitionOpener(
            storage, store, settings, self.shared, compaction, owns, self._epochs, self._logs,
            framings,
        )  # fmt: skip
        self._letting_go: set[asyncio.Task[None]] = set()
        self._flusher: asyncio.Task[None] | None = None
        self._index = IndexFlusher(store, settings, flush_interval_s, self._logs)
        self._flush_lock = self._index.lock

    @property
    def settings(self) -> LogSettings:
        return self._settings

    async def start(self) -> None:
        self._flusher = asyncio.create_task(self._index.run(), name="checkpoint-flusher")

    def owned(self) -> dict[str, PartitionLog]:
        return dict(self._logs)

    def serving(self, topic: str) -> PartitionLog | None:
        """The log this instance serves `topic` with now, if any."""
        return self._logs.get(topic)

    def is_open(self, topic: str) -> bool:
        return topic in self._logs

    def leader_epoch(self, topic: str, leader: str) -> int:
        """The epoch the instance `leader` (its Member.instance) leads the partition
        in: this instance's own, if it serves it."""
        plog = self._logs.get(topic)
        return plog.leader_epoch if plog is not None else self._epochs.of(topic, leader)

    async def partition(
        self,
        topic: str,
        wait_s: float | None = None,
        compacted: bool | None = None,
        expire_ms: int | None = None,
    ) -> PartitionLog:
        """See `_partition`; `expire_ms`: a compacted topic's survivors expire after it
        (`compact,delete`), as its config says now."""
        plog = await self._partition(topic, wait_s, compacted)
        if compacted and plog.compacted is not None:
            plog.compacted.expire_ms = expire_ms
        return plog

    async def of_topic(self, view: TopicView, index: int) -> PartitionLog:
        """Partition `index` of a topic, opened as its cleanup policy says."""
        return await self.partition(
            view.partition_topic(index),
            compacted=view.compacted,
            expire_ms=view.compacted_expire_ms,
        )

    async def _partition(
        self, topic: str, wait_s: float | None, compacted: bool | None
    ) -> PartitionLog:
        """The partition's log, opened on first use. Opening (loading its index and
        catching up from it) goes on in the background; a caller waits at most
        `wait_s` (default `open_wait_s`) and meanwhile gets a retriable
        LEADER_NOT_AVAILABLE, as from a Kafka broker still loading a partition.
        `compacted`: the topic's cleanup policy compacts (None: unknown to the
        caller); a partition open the other way is reopened (a config changed)."""
        if not self.owns(topic) or self._fenced.get(topic) == self._view():
            raise KafkaError(
                ErrorCode.not_leader_or_follower, f"{topic} is led by another instance"
            )
        existing = self._logs.get(topic)
        if existing is not None and existing.appender.fenced:
            # Another instance took it over while this one's view still said it owns
            # it: let it go, and do not take it back (that would fence the new owner)
            # until the view changes.
            self._fenced[topic] = self._view()
            await self.release([topic])
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{topic} moved to another instance")
        if existing is not None:
            if compacted is None or (existing.compacted is not None) == compacted:
                return existing
            await self.release([topic])
        return await self._opener.wait_for(topic, compacted, wait_s)

    async def release(self, topics: Sequence[str]) -> None:
        """Let partitions go (their indexes persisted first, their writers handed over:
        left for the next owner's fence to drop), side by side; the next use reopens
        one, if this instance owns it then."""
        self._opener.cancel(topics)
        await self.flush(final=True)
        async with self._flush_lock:
            plogs = [p for p in (self._logs.pop(t, None) for t in topics) if p is not None]
            await _side_by_side(p.close() for p in plogs)
        await _side_by_side(self._storage.hand_over_writer(t) for t in topics)

    async def drop(self, topics: Sequence[str]) -> None:
        """The Pulsar partitions are being deleted: stop following them and forget
        their indexes. Partitions let go side by side (a topic may have thousands)."""
        async with self._flush_lock:  # a flush in flight must not re-add its checkpoints
            await self._stop_following(topics)
            self.shared.traffic.forget(list(topics))
            await _side_by_side(self._store.forget(t) for t in topics)
        await self._epochs.forget(topics)

    def deleted_elsewhere(self, topics: Sequence[str]) -> None:
        """Another instance deleted these partitions' topic (the leader-epoch table's
        tombstones say so): stop following those open here, whose readers would
        otherwise subscribe again and make Pulsar create the partition anew. Nothing
        is forgotten here: the deleting instance does that."""
        gone = [t for t in topics if t in self._logs or self._opener.is_opening(t)]
        if gone:
            task = asyncio.create_task(self._let_go_deleted(gone), name="deleted-elsewhere")
            self._letting_go.add(task)
            task.add_done_callback(self._letting_go.discard)

    async def _let_go_deleted(self, topics: list[str]) -> None:
        self._opener.cancel(topics)
        async with self._flush_lock:
            closed = await self._stop_following(topics)
        log.info("let go of %d partitions of a topic deleted elsewhere", closed)

    async def _stop_following(self, topics: Sequence[str]) -> int:
        """Close these partitions' logs and writers and stop flushing their indexes
        (the caller holds the flush lock); how many were open."""
        plogs = [p for p in (self._logs.pop(t, None) for t in topics) if p is not None]
        self._index.forget(topics)
        await _side_by_side(p.close() for p in plogs)
        await _side_by_side(self._storage.close_writer(t) for t in topics)
        return len(plogs)

    async def flush(self, final: bool = False) -> None:
        """See `IndexFlusher.flush`."""
        await self._index.flush(final)

    async def close(self) -> None:
        self._opener.cancel_all()
        for task in self._letting_go:
            task.cancel()
        if self._flusher is not None:
            await cancel_and_wait(self._flusher)
        await self.flush(final=True)
        await _side_by_side(plog.close() for plog in self._logs.values())
        self._logs.clear()
