"""What operators see of groups (admin HTTP `/v1/groups`, `kop groups`): state,
protocol, members with their assignments, and per partition the committed
offset, the log end offset and the lag."""

from __future__ import annotations

from typing import Any

from kop.groups.consumer_protocol import assigned_partitions
from kop.groups.service import GroupService
from kop.groups.types import GroupState, TopicPartition
from kop.partitions.manager import LogManager
from kop.protocol.errors import KafkaError
from kop.storage.naming import InvalidTopicName, Namespace, resolve
from kop.storage.types import StorageError
from kop.topics.catalog import TopicCatalog


def summaries(groups: GroupService) -> list[dict[str, Any]]:
    """Every group kop knows: by the coordinator, or only by committed offsets (a
    standalone group, reported Empty as Kafka does)."""
    known = {
        *groups.coordinator.groups, *groups.consumer.coordinator.groups,
        *groups.share.coordinator.groups,
    }  # fmt: skip
    found = (summary(groups, g) for g in sorted(known | set(groups.offsets.groups())))
    return [s for s in found if s is not None]


def summary(groups: GroupService, group_id: str) -> dict[str, Any] | None:
    s = groups.share.get(group_id)
    if s is not None:  # a KIP-932 share group
        return {
            "group": group_id, "type": "share", "state": s.state, "protocol_type": "share",
            "protocol": None, "generation": s.epoch, "members": len(s.members),
        }  # fmt: skip
    c = groups.consumer.get(group_id)
    if c is not None:  # a KIP-848 consumer group
        return {
            "group": group_id, "type": "consumer", "state": c.state.value,
            "protocol_type": "consumer", "protocol": None, "generation": c.epoch,
            "members": len(c.members),
        }  # fmt: skip
    g = groups.coordinator.groups.get(group_id)
    if g is None and not groups.offsets.of(group_id):
        return None
    return {
        "group": group_id,
        "type": "classic",
        "state": (g.state if g is not None else GroupState.EMPTY).value,
        "protocol_type": g.protocol_type if g is not None else None,
        "protocol": g.protocol if g is not None else None,
        "generation": g.generation if g is not None else 0,
        "members": len(g.members) if g is not None else 0,
    }


async def describe(
    groups: GroupService, logs: LogManager, catalog: TopicCatalog, group_id: str
) -> dict[str, Any] | None:
    """None for a group kop knows nothing of. A partition whose log cannot be
    opened right now reports no log end offset and no lag."""
    found = summary(groups, group_id)
    if found is None:
        return None
    g = groups.coordinator.groups.get(group_id)
    members: list[dict[str, Any]] = []
    for m in g.members.values() if g is not None else ():
        members.append({
            "member_id": m.member_id, "group_instance_id": m.instance_id,
            "client_id": m.client_id, "client_host": m.client_host,
            "assignment": assigned_partitions(m.assignment) if m.assignment else {},
        })  # fmt: skip
    c = groups.consumer.get(group_id)
    names = {t.topic_id: t.name for t in c.topics.values()} if c is not None else {}
    for cm in c.members.values() if c is not None else ():
        members.append({
            "member_id": cm.member_id, "group_instance_id": cm.instance_id,
            "client_id": cm.client_id, "client_host": cm.client_host,
            "member_epoch": cm.epoch, "protocol": "classic" if cm.classic else "consumer",
            "assignment": {names[t]: sorted(p) for t, p in cm.assigned.items() if t in names},
        })  # fmt: skip
    offsets = []
    committed = groups.offsets.of(group_id)
    for tp in sorted(committed, key=lambda t: (t.topic, t.partition)):
        end = await log_end(logs, catalog, groups.scope.namespace(group_id), tp)
        offset = committed[tp].offset
        offsets.append({
            "topic": tp.topic, "partition": tp.partition, "committed_offset": offset,
            "log_end_offset": end, "lag": max(end - offset, 0) if end is not None else None,
            "metadata": committed[tp].metadata,
        })  # fmt: skip
    return {**found, "member_details": members, "offsets": offsets}


async def log_end(
    logs: LogManager, catalog: TopicCatalog, ns: Namespace, tp: TopicPartition
) -> int | None:
    try:
        view = await catalog.describe(resolve(tp.topic, ns))
        if view is None or not 0 <= tp.partition < view.partitions:
            return None
        plog = await logs.of_topic(view, tp.partition)
    except (KafkaError, StorageError, InvalidTopicName):
        return None
    return plog.high_watermark


class GroupReport:
    """The pieces a report needs, bound once by the composition root."""

    def __init__(self, groups: GroupService, logs: LogManager, catalog: TopicCatalog) -> None:
        self.groups = groups
        self._logs = logs
        self._catalog = catalog

    def list(self) -> list[dict[str, Any]]:
        return summaries(self.groups)

    async def describe(self, group_id: str) -> dict[str, Any] | None:
        return await describe(self.groups, self._logs, self._catalog, group_id)
