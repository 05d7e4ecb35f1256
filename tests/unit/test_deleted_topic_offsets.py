"""DeleteTopics removes the topic's committed offsets from every group, durably, as
Kafka does: a topic created again under the same name must not resume a group at
an offset of the old topic (it would silently skip the new topic's records)."""

from __future__ import annotations

import asyncio
import datetime

from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.types import TopicName
from kio.static.primitive import i32Timedelta

from kop.api import group_admin, offsets, topics_admin
from kop.api.context import RequestContext, Services
from kop.groups.coordinator import Limits
from kop.groups.offsets_store import OffsetsStore
from kop.groups.service import GroupService
from kop.groups.types import GroupState, TopicPartition
from kop.protocol.errors import ErrorCode
from kop.storage.naming import PulsarTopic
from tests.unit.test_every_version import (
    NS,
    _services,
    close_services,
    commit_request,
    describe_groups_request,
)

CTX = RequestContext(NS, "test", 5)
TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))


async def _commit(s: Services, group: str, *topics: str) -> None:
    request = commit_request(group, {t: [0] for t in topics}, offset=7, metadata="")
    answer = (await offsets.offset_commit(s, CTX, offsets.Commit(request))).answer
    assert all(p.error_code is ErrorCode.none for t in answer.topics for p in t.partitions)


async def _reloaded(s: Services) -> GroupService:
    """A restarted kop's groups, read back from the same offsets topic."""
    assert s.groups is not None
    store = s.groups._store
    again = GroupService(OffsetsStore(store.storage, store.topic, store.partitions), Limits())
    await again.start()
    while not again.loaded:
        await asyncio.sleep(0.001)
    return again


async def test_deleting_a_topic_removes_its_offsets_from_every_group_durably() -> None:
    s = await _services()
    await s.catalog.create(PulsarTopic(NS, "u", "u"), 1, {})
    assert s.groups is not None
    try:
        await _commit(s, "both", "t", "u")
        await _commit(s, "only-t", "t")
        await _commit(s, "full-name", "persistent://public/default/t")
        named = DeleteTopicsRequest(
            topics=(DeleteTopicState(name=TopicName("t"), topic_id=None),), timeout=TIMEOUT
        )
        deleted = (await topics_admin.delete_topics(s, CTX, named)).answer
        assert deleted.responses[0].error_code is ErrorCode.none
        assert set(s.groups.offsets.of("both")) == {TopicPartition("u", 0)}
        assert s.groups.offsets.of("only-t") == {} == s.groups.offsets.of("full-name")
        asked = describe_groups_request("only-t", "both")
        described = (await group_admin.describe_groups(s, CTX, asked)).answer
        states = [g.group_state for g in described.groups]
        assert states == [GroupState.DEAD.value, GroupState.EMPTY.value]  # as Kafka
        again = await _reloaded(s)
        try:
            assert set(again.offsets.of("both")) == {TopicPartition("u", 0)}
            assert again.offsets.of("only-t") == {} == again.offsets.of("full-name")
            assert "only-t" not in again.coordinator.groups
        finally:
            await again.close()
    finally:
        await close_services(s)
