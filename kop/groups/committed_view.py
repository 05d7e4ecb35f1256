"""Every group's committed offsets, as the offsets topic holds them, on every instance.

The coordinator of a group knows its offsets, but with several instances the
partitions a group consumes are mostly owned elsewhere, and what acts on a
partition's behalf needs them where the partition is served: the subscription
mirror (placing a subscription needs the owner's offset index) and the lag gauges
(the log end is the owner's). So each instance tails every partition of the
offsets topic, read only (it never takes a partition), and keeps the latest
committed offset of each (group, partition). The tail is seconds behind a commit
at most; a coordinator's answers never come from here.

A reader that fails is opened again after `retry_s` and the partition read afresh;
once caught up, what changed meanwhile is told to `sink` (what the old pass held and
the new one does not is forgotten). Changes read before the first catch-up are not
told: they are the state at start, which the mirror's reconcile handles in bulk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Protocol

from kop.groups.offsets_codec import OffsetRecord, decode
from kop.groups.record_json import MalformedRecord
from kop.groups.types import CommittedOffset, TopicPartition
from kop.storage import batch_layout
from kop.storage.port import MessageLog
from kop.storage.types import Idle, StorageError, StoredEntry
from kop.systables.barrier import HELD

log = logging.getLogger(__name__)

ByGroup = dict[str, dict[TopicPartition, CommittedOffset]]


class Sink(Protocol):
    """Told of commits and removals as the tail reads them (the subscription mirror)."""

    def committed(self, group: str, offsets: dict[TopicPartition, int]) -> None: ...

    def forgotten(self, group: str, tps: list[TopicPartition]) -> None: ...


class CommittedView:
    def __init__(
        self, storage: MessageLog, partition_topics: Sequence[str], retry_s: float = 1.0
    ) -> None:
        self._storage = storage
        self._topics = list(partition_topics)
        self._retry_s = retry_s
        self._parts: dict[str, ByGroup] = {t: {} for t in self._topics}
        self._caught_up: set[str] = set()
        self.sink: Sink | None = None
        self.malformed = 0

    @property
    def loaded(self) -> bool:
        """Every partition has been read to its end once."""
        return len(self._caught_up) == len(self._topics)

    def groups(self) -> list[str]:
        return sorted({g for part in self._parts.values() for g in part})

    def items(self) -> Iterator[tuple[str, dict[TopicPartition, CommittedOffset]]]:
        for part in list(self._parts.values()):
            yield from list(part.items())

    def of(self, group: str) -> dict[TopicPartition, CommittedOffset]:
        for part in self._parts.values():
            if group in part:
                return dict(part[group])
        return {}

    async def run(self) -> None:
        await asyncio.gather(*(self._follow(t) for t in self._topics))

    async def _follow(self, topic: str) -> None:
        while True:
            try:
                await self._read(topic)
            except StorageError as exc:
                log.warning("committed offsets: reading %s: %s (again in %.1f s)",
                            topic, exc, self._retry_s)  # fmt: skip
            await asyncio.sleep(self._retry_s)

    async def _read(self, topic: str) -> None:
        """One pass over the partition: to its end into a fresh map, compared with
        what the last pass held, then every record as it comes."""
        reader = await self._storage.reader(topic, None, compacted=True)
        reader.report_idle()
        try:
            fresh: ByGroup = {}
            while not isinstance(got := await reader.read(), Idle):
                self._apply(fresh, got, tell=False)
            self._replace(topic, fresh)
            while True:
                got = await reader.read()
                if not isinstance(got, Idle):
                    self._apply(self._parts[topic], got, tell=True)
        finally:
            with contextlib.suppress(StorageError):
                await reader.close()

    def _replace(self, topic: str, fresh: ByGroup) -> None:
        old = self._parts[topic]
        self._parts[topic] = fresh
        first = topic not in self._caught_up
        self._caught_up.add(topic)
        if first or self.sink is None:
            return
        for group in old.keys() | fresh.keys():
            before, now = old.get(group, {}), fresh.get(group, {})
            changed = {
                tp: o.offset for tp, o in now.items()
                if tp not in before or before[tp].offset != o.offset
            }  # fmt: skip
            if changed:
                self.sink.committed(group, changed)
            gone = [tp for tp in before if tp not in now]
            if gone:
                self.sink.forgotten(group, gone)

    def _apply(self, into: ByGroup, entry: StoredEntry, tell: bool) -> None:
        for msg in batch_layout.messages(entry):
            if HELD.is_barrier(msg.partition_key):
                continue
            try:
                record = decode(msg.partition_key, None if msg.null_value else msg.payload)
            except MalformedRecord:
                self.malformed += 1  # the coordinator's load logs these
                continue
            if isinstance(record, OffsetRecord):
                self._note(into, record, tell)

    def _note(self, into: ByGroup, record: OffsetRecord, tell: bool) -> None:
        offsets = into.setdefault(record.group, {})
        before = offsets.get(record.tp)
        if record.offset is None:
            offsets.pop(record.tp, None)
        else:
            offsets[record.tp] = record.offset
        if not offsets:
            del into[record.group]
        if not tell or self.sink is None or before == record.offset:
            return
        if record.offset is None:
            self.sink.forgotten(record.group, [record.tp])
        elif before is None or before.offset != record.offset.offset:
            self.sink.committed(record.group, {record.tp: record.offset.offset})
