"""What a deleted topic leaves in groups, and on the other instances. DeleteTopics
runs on one instance: it lets go of its partitions and removes the offsets of the
groups it coordinates (`forget_deleted_topics`). The other instances learn of the
deletion from the leader-epoch table's tombstones (`LeaderEpochs.on_deleted`): they
let go of the partitions they own (their readers would otherwise subscribe again
and make Pulsar create them anew) and remove their groups' offsets of the topic, as
every Kafka broker does when the metadata log says a topic is gone."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable

from kop.groups.service import GroupService
from kop.groups.types import GroupState
from kop.partitions.manager import LogManager
from kop.storage.naming import InvalidTopicName
from kop.storage.types import StorageError

log = logging.getLogger("kop.groups.service")  # where these lines always went

_PARTITION = re.compile(r"-partition-\d+$")


async def forget_deleted_topics(groups: GroupService, deleted: Callable[[str, str], bool]) -> None:
    """After DeleteTopics, as Kafka: the topics' committed offsets go from every group
    this instance coordinates, durably, and an Empty group left without offsets goes
    too (Dead). A write that fails is logged; the topic is gone either way."""
    offsets, coordinator = groups.offsets, groups.coordinator
    try:
        for group in await offsets.forget_topics(deleted):
            g = coordinator.groups.get(group)
            if offsets.of(group) or (g is not None and (g.members or g.pending)):
                continue
            if g is None or g.state is GroupState.EMPTY:
                await offsets.forget_group(group)  # its group record's tombstone
                coordinator.forget(group)
    except StorageError as exc:
        log.warning("offsets of deleted topics not all removed: %s", exc)


def deleted_topics(partition_topics: Iterable[str]) -> set[str]:
    """The full Pulsar names the partitions belong to (a non-partitioned topic is
    its own only partition)."""
    return {_PARTITION.sub("", p) for p in partition_topics} | set(partition_topics)


class DeletionFollower:
    def __init__(self, groups: GroupService, logs: LogManager) -> None:
        self._groups = groups
        self._logs = logs
        self._pending: set[str] = set()
        self._draining = False

    def deleted(self, partition_topics: list[str]) -> None:
        """Told by the tail, one entry at a time: the removals are batched."""
        self._logs.deleted_elsewhere(partition_topics)
        self._pending.update(partition_topics)
        if not self._draining:
            self._draining = True
            self._groups.background(self._drain(), "groups-deleted-topics")

    async def _drain(self) -> None:
        try:
            while self._pending:
                gone = deleted_topics(self._pending)
                self._pending.clear()
                await forget_deleted_topics(self._groups, functools.partial(self._in, gone))
        finally:
            self._draining = False

    def _in(self, gone: set[str], group: str, name: str) -> bool:
        try:
            return self._groups.scope.topic(group, name).full in gone
        except InvalidTopicName:
            return False
