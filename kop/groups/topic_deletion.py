"""Committed offsets of a topic deleted through another instance. DeleteTopics runs
on one instance, and it removes the offsets of the groups it coordinates; the other
instances learn of the deletion from the leader-epoch table's tombstones
(`LeaderEpochs.on_deleted`) and remove their groups' offsets of the topic, as every
Kafka coordinator does when the metadata log says a topic is gone."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from kop.groups.service import GroupService
from kop.storage.naming import InvalidTopicName, Namespace, resolve

_PARTITION = re.compile(r"-partition-\d+$")


def deleted_topics(partition_topics: Iterable[str]) -> set[str]:
    """The full Pulsar names the partitions belong to (a non-partitioned topic is
    its own only partition)."""
    return {_PARTITION.sub("", p) for p in partition_topics} | set(partition_topics)


class DeletionFollower:
    def __init__(self, groups: GroupService, ns: Namespace) -> None:
        self._groups = groups
        self._ns = ns  # what a short topic name in a commit means (as the mirror reads it)
        self._pending: set[str] = set()
        self._draining = False

    def deleted(self, partition_topics: list[str]) -> None:
        """Told by the tail, one entry at a time: the removals are batched."""
        self._pending.update(partition_topics)
        if not self._draining:
            self._draining = True
            self._groups.background(self._drain(), "groups-deleted-topics")

    async def _drain(self) -> None:
        try:
            while self._pending:
                gone = deleted_topics(self._pending)
                self._pending.clear()
                await self._groups.topics_deleted(functools.partial(self._in, gone))
        finally:
            self._draining = False

    def _in(self, gone: set[str], name: str) -> bool:
        try:
            return resolve(name, self._ns).full in gone
        except InvalidTopicName:
            return False
