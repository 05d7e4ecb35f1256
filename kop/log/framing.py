"""A topic's Confluent framing at the edge of its partitions' logs (issue 38,
kop.entries.framing says what is converted): which Confluent id each Pulsar schema
version of the topic has, learned from the Schema Registry, and the partition's storage
seen through it, so every read of the log (a tail, history, compaction, kop's own write
receipts) serves framed values, and what the Kafka side wrote is stored bare.

The map is learned when a partition opens, again at most every `refresh_s` while
records are produced, at once when a produced record names an id it does not know (a
serializer registers its schema just before its first record) or an entry names a
version it does not know (a typed Pulsar producer evolved the schema), and when this
instance's registry registered a version of the topic's schema. A schema registered
through another instance that a record names before this instance learned of it is
learned by the refresh on the unknown id.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from kop.aio.futures import cancel_and_wait
from kop.entries import framing as frames
from kop.storage.naming import Namespace, PulsarTopic, split_full, topic_of_partition
from kop.storage.port import MessageLog, TopicReader, TopicWriter
from kop.storage.schemas import SchemaIds
from kop.storage.types import Idle, OutgoingEntry, Position, StoredEntry, WriteRef, WriterMode

log = logging.getLogger(__name__)

AGAIN_AFTER_S = 0.5  # an unknown id or version asks the registry at most this often
_MAX_UNSHOWN = 1024  # versions remembered as not shown by the registry (other types)
LEARN_WITHIN_S = 5.0  # what a produce or a tail waits for the registry at the most


# Whether a topic's config lets its values be converted (`kop.schema.registry.framing`).
Switch = Callable[[PulsarTopic], Awaitable[bool]]


async def _always(_topic: PulsarTopic) -> bool:
    return True


class TopicFraming:
    def __init__(
        self, ids: SchemaIds, topic: PulsarTopic, refresh_s: float,
        clock: Callable[[], float] = time.monotonic, switch: Switch = _always,
    ) -> None:  # fmt: skip
        self._switch = switch
        self._source = ids
        self.topic = topic
        self._refresh_s = refresh_s
        self._clock = clock
        self._id_of: dict[int, int] = {}  # Pulsar version -> Confluent id
        self._version_of = frames.IdVersions()  # Confluent id -> Pulsar version (and tail)
        self._at = float("-inf")
        self._started = 0  # learns begun, so a reader knows whether one began after it looked
        self._unshown: set[int] = set()  # versions a learn after their sighting did not show
        self._sighted: dict[int, int] = {}  # unknown version -> learns begun when first seen
        self._lock = asyncio.Lock()
        self._refreshing: asyncio.Task[None] | None = None

    @property
    def active(self) -> bool:
        """Whether the topic has a schema whose records are converted."""
        return bool(self._id_of)

    def version(self, sid: int) -> int | None:
        return self._version_of.get(sid)

    @property
    def versions(self) -> Mapping[int, int]:
        """Confluent id -> Pulsar version, as last learned."""
        return self._version_of

    def id_of(self, version: int) -> int | None:
        return self._id_of.get(version)

    def tail_of(self, sid: int) -> bytes:
        """What a framed value carries after `sid` (Protobuf's message indexes)."""
        return self._version_of.tails.get(sid, b"")

    def forget(self) -> None:
        """Learn again before the next use (this instance registered a version)."""
        self._at = float("-inf")

    async def learn(
        self, *, unless_within: float = 0.0, fresh: bool = False, from_pulsar: bool = False,
        unless_begun_after: int | None = None,
    ) -> None:  # fmt: skip
        """Ask the registry (not if it was asked within `unless_within` seconds, nor if
        a learn began after the `unless_begun_after`th; `fresh` and `from_pulsar` as
        SchemaIds takes them). A registry that cannot answer leaves the map as it was:
        what it does not know passes unconverted, and the next produce asks again."""
        async with self._lock:
            if unless_begun_after is not None and self._started > unless_begun_after:
                return
            if self._clock() - self._at < unless_within:
                return
            self._started += 1
            try:
                async with asyncio.timeout(LEARN_WITHIN_S):  # a tail waits for it
                    found = await self._source.ids(self.topic, fresh=fresh, from_pulsar=from_pulsar)
                    if found and not await self._switch(self.topic):
                        found = {}
            except Exception as exc:  # the registry's storage away: try again later
                log.warning("schema ids of %s: %s", self.topic.full, exc or "timed out")
                self._at = self._clock()  # not again at once: retried at the next refresh
                return
            self._id_of = {version: framing.id for version, framing in found.items()}
            by_id = {}
            for version in sorted(found):  # an id of two versions names the newer
                by_id[found[version].id] = version
            tails = {f.id: f.tail for f in found.values()}
            self._version_of = frames.IdVersions(by_id, tails)
            self._at = self._clock()

    async def learn_for(self, version: int) -> None:
        """An entry names `version`, which the map lacks. Its first sighting asks the
        registry even right after another learn (a typed Pulsar producer may have added
        it a moment ago; its entries would otherwise be served unframed for good), once
        for all the readers that saw it meanwhile. A version that a learn begun after its
        sighting did not show (a type the registry does not show) is asked about only
        every AGAIN_AFTER_S."""
        if version in self._unshown:
            await self.learn(unless_within=AGAIN_AFTER_S, from_pulsar=True)
            return
        # The version existed when it was first seen: a learn begun since shows it.
        first_seen = self._sighted.setdefault(version, self._started)
        await self.learn(unless_begun_after=first_seen, from_pulsar=True)
        self._sighted.pop(version, None)
        if version not in self._id_of and len(self._unshown) < _MAX_UNSHOWN:
            self._unshown.add(version)

    async def for_produce(self) -> Mapping[int, int] | None:
        """The id -> version map a produce encodes with (None: nothing to convert). The
        first use, and the first after `forget`, waits to learn; a merely old map is
        learned again in the background (the produce goes on with it; an id it does
        not know is learned then, `Appender`)."""
        if self._at == float("-inf"):
            await self.learn()
        elif self._clock() - self._at >= self._refresh_s and self._refreshing is None:
            self._refreshing = asyncio.create_task(self._refresh(), name="schema-ids")
        return self._version_of if self.active else None

    async def _refresh(self) -> None:
        try:
            await self.learn()
        finally:
            self._refreshing = None

    async def close(self) -> None:
        task = self._refreshing
        if task is not None:
            await cancel_and_wait(task)


class Framings:
    """Each topic's framing on this instance, shared by its partitions."""

    def __init__(self, ids: SchemaIds, refresh_s: float, switch: Switch = _always) -> None:
        self._ids = ids
        self._refresh_s = refresh_s
        self._switch = switch
        self._topics: dict[str, TopicFraming] = {}

    def of(self, partition: str) -> TopicFraming:
        base = topic_of_partition(partition)
        found = self._topics.get(base)
        if found is None:
            tenant, namespace, local = split_full(base)
            topic = PulsarTopic(Namespace(tenant, namespace), local, local)
            found = self._topics[base] = TopicFraming(
                self._ids, topic, self._refresh_s, switch=self._switch
            )
        return found

    async def close(self) -> None:
        for framing in self._topics.values():
            await framing.close()

    def changed(self, topic: PulsarTopic) -> None:
        """The registry registered a version of `topic`'s schema here."""
        found = self._topics.get(topic.full)
        if found is not None:
            found.forget()


class FramedLog:
    """The partition's storage, its own topic's entries framed on the way out."""

    def __init__(self, storage: MessageLog, topic: str, framing: TopicFraming) -> None:
        self._storage = storage
        self._topic = topic
        self.framing = framing
        self._wrapped: tuple[TopicWriter, _FramedWriter] | None = None

    async def writer(
        self, topic: str, *, mode: WriterMode = WriterMode.SHARED, name: str | None = None
    ) -> TopicWriter:
        return self._face(topic, await self._storage.writer(topic, mode=mode, name=name))

    def open_writer(self, topic: str) -> TopicWriter | None:
        writer = self._storage.open_writer(topic)
        return None if writer is None else self._face(topic, writer)

    def _face(self, topic: str, writer: TopicWriter) -> TopicWriter:
        if topic != self._topic:
            return writer
        if self._wrapped is None or self._wrapped[0] is not writer:  # one face per writer
            self._wrapped = (writer, _FramedWriter(writer, self.framing))
        return self._wrapped[1]

    async def close_writer(self, topic: str, name: str | None = None) -> None:
        await self._storage.close_writer(topic, name)

    async def hand_over_writer(self, topic: str, name: str | None = None) -> None:
        await self._storage.hand_over_writer(topic, name)

    async def earliest(self, topic: str) -> Position | None:
        return await self._storage.earliest(topic)

    async def end(self, topic: str) -> Position | None:
        return await self._storage.end(topic)

    async def close(self) -> None:
        """Nothing: the storage is shared, this is one partition's view of it."""

    async def reader(
        self, topic: str, start: Position | None, *, compacted: bool = False, prefetch: int = 1000
    ) -> TopicReader:
        reader = await self._storage.reader(topic, start, compacted=compacted, prefetch=prefetch)
        return reader if topic != self._topic else _FramedReader(reader, self.framing)


def reframe(entry: StoredEntry, framing: TopicFraming) -> StoredEntry | None:
    """The entry framed with its version's id; None when the version is not known."""
    if entry.schema_version is None:
        return entry
    version = frames.version_of(entry.schema_version)
    sid = None if version is None else framing.id_of(version)
    return None if sid is None else frames.reframed(entry, sid, framing.tail_of(sid))


class _FramedReader:
    def __init__(self, reader: TopicReader, framing: TopicFraming) -> None:
        self._reader = reader
        self._framing = framing

    async def read(self) -> StoredEntry | Idle:
        entry = await self._reader.read()
        if isinstance(entry, Idle) or entry.schema_version is None:
            return entry
        framed = reframe(entry, self._framing)
        version = frames.version_of(entry.schema_version)
        if framed is None and version is not None:  # a version it has not learned of yet
            await self._framing.learn_for(version)
            framed = reframe(entry, self._framing)
        return entry if framed is None else framed  # a version the registry does not show

    def report_idle(self) -> None:
        self._reader.report_idle()

    async def close(self) -> None:
        await self._reader.close()


class _FramedWriter:
    def __init__(self, writer: TopicWriter, framing: TopicFraming) -> None:
        self._writer = writer
        self._framing = framing

    @property
    def name(self) -> str:
        return self._writer.name

    @property
    def epoch(self) -> int:
        return self._writer.epoch

    @property
    def resumed_after(self) -> int:
        return self._writer.resumed_after

    def send_all(
        self, entries: Sequence[OutgoingEntry]
    ) -> tuple[WriteRef, asyncio.Future[list[StoredEntry | None]]]:
        ref, stored = self._writer.send_all(entries)
        if not any(e.schema_version is not None for e in entries):
            return ref, stored
        framed: asyncio.Future[list[StoredEntry | None]] = (
            asyncio.get_running_loop().create_future()
        )

        def done(f: asyncio.Future[list[StoredEntry | None]]) -> None:
            if f.cancelled():
                framed.cancel()
            elif (exc := f.exception()) is not None:
                framed.set_exception(exc)
            else:
                framed.set_result([None if e is None else (reframe(e, self._framing) or e)
                                   for e in f.result()])  # fmt: skip

        stored.add_done_callback(done)
        return ref, framed

    async def wait_capacity(self, size: int) -> None:
        await self._writer.wait_capacity(size)

    def has_room(self, size: int) -> bool:
        return self._writer.has_room(size)

    async def close(self) -> None:
        await self._writer.close()
