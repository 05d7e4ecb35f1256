"""The subscription mirror set right after a restart. Its queues live in memory:
a removal queued before a restart is lost, and the durable subscription it meant
to remove would pin the group's data for good; a placement lost likewise leaves a
subscription behind its group. So once the groups are loaded, this lists the
subscriptions on every partition of the topics kop serves (its namespace and
every namespace a group committed in), at most `rate` admin calls a second in the
background (readiness never waits on it):
- a subscription with kop's prefix whose group has no committed offset on that
  partition any more (group deleted, offsets expired or deleted) is removed by
  the partition's owner;
- every committed (group, partition) is re-placed at its offset once the
  partition is open (placing needs its offset index; opening thousands of
  partitions only for this would cost more than a subscription behind its group);
- a subscription named exactly after a group with offsets there, without the
  prefix, is what kop before the prefix made, or a Pulsar application's: it is
  left alone and counted in one log line (docs/decisions.md D13).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from kop.groups.scope import ReservedGroupName
from kop.groups.types import CommittedOffset, TopicPartition
from kop.protocol.errors import KafkaError
from kop.storage.naming import InvalidTopicName, Namespace, resolve
from kop.storage.types import AdminError, StorageError

if TYPE_CHECKING:
    from kop.groups.mirror import SubscriptionMirror

log = logging.getLogger(__name__)

Key = tuple[str, TopicPartition]
Where = tuple[str, int]  # full Pulsar topic name, partition index


class _Refused(Exception):
    """Pulsar refuses kop's role what the reconcile needs."""


class CommittedOffsets(Protocol):
    """What the mirror reads of every group's commits (`CommittedView`): whether the
    offsets topic has been read to its end, and the offsets as they are now."""

    @property
    def loaded(self) -> bool: ...

    def groups(self) -> list[str]: ...

    def of(self, group: str) -> dict[TopicPartition, CommittedOffset]: ...


class MirrorReconciler:
    def __init__(self, mirror: SubscriptionMirror, rate: float = 20.0) -> None:
        self._mirror = mirror
        self._gap_s = 1.0 / rate
        self.removed = 0  # removals queued
        self.deferred = 0  # (group, partition) re-placed when open
        self.legacy = 0  # unprefixed subscriptions named after a group, left alone
        self._legacy_example = ("", "")  # (partition topic, subscription)

    async def run(self) -> None:
        groups = self._mirror.view
        if groups is None:
            return
        while not groups.loaded:
            await asyncio.sleep(0.1)
        committed = self._committed(groups)
        default = self._mirror.scope.default
        namespaces = {default} | {resolve(full, default).namespace for full, _ in committed}
        try:
            for ns in sorted(namespaces, key=lambda n: n.path):
                await self._namespace(ns, committed)
        except _Refused as exc:
            log.warning("mirror reconcile stopped: %s (docs/pulsar.md)", exc)
            return
        self._report()

    def _committed(self, offsets: CommittedOffsets) -> dict[Where, list[Key]]:
        """Every committed (group, partition), by the partition it names."""
        by_where: dict[Where, list[Key]] = {}
        for group in offsets.groups():
            for tp in offsets.of(group):
                try:
                    full = self._mirror.scope.topic(group, tp.topic).full
                except InvalidTopicName:
                    continue
                by_where.setdefault((full, tp.partition), []).append((group, tp))
        return by_where

    async def _namespace(self, ns: Namespace, committed: dict[Where, list[Key]]) -> None:
        mirror = self._mirror
        try:
            await self._pace()
            names = await mirror.catalog.names(ns)
        except (AdminError, StorageError, KafkaError) as exc:
            log.warning("mirror reconcile: cannot list %s: %s", ns.path, exc)
            return
        for name in names:
            try:
                await self._pace()
                view = await mirror.catalog.describe(resolve(name, ns))
            except (InvalidTopicName, AdminError, StorageError, KafkaError) as exc:
                log.warning("mirror reconcile: %s/%s: %s", ns.path, name, exc)
                continue
            for index in range(view.partitions if view is not None else 0):
                assert view is not None
                where = (view.topic.full, index)
                await self._partition(view.partition_topic(index), where, committed.get(where, []))

    async def _partition(self, topic: str, where: Where, keys: Iterable[Key]) -> None:
        mirror = self._mirror
        try:
            await self._pace()
            subscriptions = await mirror.admin.subscriptions(topic)
        except AdminError as exc:
            if exc.status in (401, 403):  # the same for every partition: say it once
                raise _Refused(f"kop's role may not list subscriptions ({exc})") from exc
            log.warning("mirror reconcile: subscriptions of %s: %s", topic, exc)
            return
        except StorageError as exc:
            log.warning("mirror reconcile: subscriptions of %s: %s", topic, exc)
            return
        ns = resolve(where[0], mirror.scope.default).namespace
        for name in subscriptions:
            group = _key(mirror, ns, mirror.names.group_of(name))
            if group is None:
                if mirror.committed_at(name, *where) is not None:
                    self.legacy += 1
                    self._legacy_example = (topic, name)
            elif mirror.committed_at(group, *where) is None and mirror.owns(topic):
                mirror.forgotten(group, [TopicPartition(where[0], where[1])])
                self.removed += 1
        for key in keys:
            mirror.defer(topic, key)
            self.deferred += 1

    async def _pace(self) -> None:
        await asyncio.sleep(self._gap_s)

    def _report(self) -> None:
        log.info(
            "mirror reconciled: %d subscriptions without a committed offset to remove, "
            "%d (group, partition) to re-place when their partition is open",
            self.removed,
            self.deferred,
        )
        if self.legacy:
            topic, name = self._legacy_example
            log.warning(
                "%d subscriptions are named exactly after a group with offsets on their "
                "partition, without the prefix %r (e.g. %r on %s): kop before the prefix "
                "mirrored groups so, but a Pulsar application may own them, so kop leaves "
                "them; remove kop's with `pulsar-admin topics unsubscribe` (docs/groups.md)",
                self.legacy,
                self._mirror.names.prefix,
                name,
                topic,
            )


def _key(mirror: SubscriptionMirror, ns: Namespace, group: str | None) -> str | None:
    """The group a subscription of kop's on a topic of `ns` mirrors (None: none)."""
    if group is None:
        return None
    try:
        return mirror.scope.key(ns, group)
    except ReservedGroupName:
        return None
