"""Committed offsets in memory, written through to the offsets store, and their
expiry (Kafka's offsets.retention.minutes, KIP-211): an Empty group's offsets
expire a retention period after it became Empty; a standalone group's (no
protocol type), and a Stable consumer group's of topics it no longer subscribes
to, a retention period after each commit; an explicit expiry time from an old
OffsetCommit wins. An Empty group left with no offsets is removed, and so is one
that has been Empty without any for a check interval (Kafka's cleanupGroupMetadata):
otherwise groups that join and leave without committing would pile up for good,
and hold the room `max_groups` gives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from kop.groups.group import Group
from kop.groups.offsets_store import OffsetsStore
from kop.groups.types import CommittedOffset, GroupState, TopicPartition
from kop.storage.types import StorageError

log = logging.getLogger(__name__)

CHECK_INTERVAL_MS = 600_000  # offsets.retention.check.interval.ms


class Offsets:
    def __init__(self, store: OffsetsStore, retention_ms: int) -> None:
        self._store = store
        self.retention_ms = retention_ms
        self._by_group: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        self._next_check_ms = 0

    def restore(self, loaded: Mapping[str, Mapping[TopicPartition, CommittedOffset]]) -> None:
        for group, offsets in loaded.items():
            self._by_group.setdefault(group, {}).update(offsets)

    def unload(self, groups: list[str]) -> None:
        """Another instance coordinates these groups now: forget them here only."""
        for group in groups:
            self._by_group.pop(group, None)

    def of(self, group: str) -> dict[TopicPartition, CommittedOffset]:
        return dict(self._by_group.get(group, {}))

    def groups(self) -> list[str]:
        return sorted(self._by_group)

    async def commit(self, group: str, offsets: Mapping[TopicPartition, CommittedOffset]) -> None:
        """Persisted first, then visible: a fetch never sees an unpersisted commit."""
        await self._store.commit(group, offsets)
        self.applied(group, offsets)

    def applied(self, group: str, offsets: Mapping[TopicPartition, CommittedOffset]) -> None:
        """Offsets persisted elsewhere (a transaction's, by its marker) made visible."""
        self._by_group.setdefault(group, {}).update(offsets)

    async def delete(self, group: str, tps: list[TopicPartition]) -> None:
        known = [tp for tp in tps if tp in self._by_group.get(group, {})]
        await self._store.delete_offsets(group, known)
        self._drop(group, known)

    async def forget_group(self, group: str) -> None:
        known = list(self._by_group.get(group, {}))
        await self._store.delete_group(group, known)
        self._by_group.pop(group, None)

    async def forget_topics(self, deleted: Callable[[str, str], bool]) -> list[str]:
        """Tombstone every group's offsets of deleted topics (Kafka's onPartitionsDeleted):
        a topic created again under the name must not resume a group at an offset of
        the old one, past records it would then never read. `deleted(group, topic)`
        says whether a topic name as that group committed it is gone. Returns the groups that
        had any, each done at once; a failure leaves the others done."""
        touched = []
        for group, offsets in list(self._by_group.items()):
            gone = [tp for tp in offsets if deleted(group, tp.topic)]
            if gone:
                await self.delete(group, gone)
                touched.append(group)
        return touched

    def _drop(self, group: str, tps: list[TopicPartition]) -> None:
        offsets = self._by_group.get(group, {})
        for tp in tps:
            offsets.pop(tp, None)
        if not offsets:
            self._by_group.pop(group, None)

    def expired(self, group: str, g: Group | None, now_ms: int) -> list[TopicPartition]:
        subscribed: set[str] = set()
        if g is not None and g.state is not GroupState.EMPTY:
            # A Stable consumer group's offsets of topics it no longer subscribes to
            # expire by commit time; the others are still in use.
            found = g.subscribed_topics() if g.state is GroupState.STABLE else None
            if found is None:
                return []
            subscribed = found
        standalone = g is None or g.protocol_type is None or g.state is not GroupState.EMPTY
        out = []
        for tp, o in self._by_group.get(group, {}).items():
            if tp.topic in subscribed:
                continue
            if o.expire_ms is not None:
                due = now_ms >= o.expire_ms
            else:
                base = o.commit_ms if standalone or g is None else g.state_ms
                due = now_ms - base >= self.retention_ms
            if due:
                out.append(tp)
        return out

    async def expire(
        self,
        groups: dict[str, Group],
        now_ms: int,
        failed: Callable[[str, StorageError], object] = lambda _g, _e: None,
        in_use: Callable[[str], bool] = lambda _g: False,
    ) -> list[str]:
        """Tombstone expired offsets (at most every CHECK_INTERVAL_MS); returns the
        Empty groups removed because none of their offsets are left. A write that
        fails is told to `failed` and tried again at the next check."""
        if now_ms < self._next_check_ms:
            return []
        self._next_check_ms = now_ms + CHECK_INTERVAL_MS
        removed = []
        for group in list(self._by_group):
            if in_use(group):  # a KIP-848 group with members: all its offsets are kept
                continue
            g = groups.get(group)
            tps = self.expired(group, g, now_ms)
            if not tps:
                continue
            try:
                if len(tps) == len(self._by_group[group]) and (g is None or not g.members):
                    await self.forget_group(group)
                    removed.append(group)
                else:
                    await self.delete(group, tps)
            except StorageError as exc:
                log.warning("expiring offsets of %s: %s", group, exc)
                failed(group, exc)
                self._next_check_ms = now_ms  # try again at the next wake-up
        for group, g in list(groups.items()):
            if group in self._by_group or not _idle(g, now_ms):
                continue
            try:
                await self.forget_group(group)  # its group record's tombstone
                removed.append(group)
            except StorageError as exc:
                log.warning("removing empty group %s: %s", group, exc)
                failed(group, exc)
                self._next_check_ms = now_ms
        return removed


def _idle(g: Group, now_ms: int) -> bool:
    """Empty, nobody joining, and so for a check interval: a group a commit has just
    made is not removed before its offsets are stored."""
    idle = g.state is GroupState.EMPTY and not g.members and not g.pending
    return idle and now_ms - g.state_ms >= CHECK_INTERVAL_MS
