"""OffsetDelete as Kafka answers it: a live consumer group keeps the offsets of
topics its members subscribe to and loses the others; an Empty group loses all."""

from __future__ import annotations

from kafka.coordinator.assignors.abstract import ConsumerProtocolSubscription
from kio.schema.join_group.v9.request import JoinGroupRequest

from kop.api import groups, offsets
from kop.api.context import RequestContext, Services
from kop.protocol.errors import ErrorCode
from kop.storage.naming import PulsarTopic
from tests.unit.test_every_version import (
    NS,
    _resolved,
    _services,
    close_services,
    commit_request,
    delete_offsets_request,
    join_request,
    sync_request,
)

CTX = RequestContext(NS, "test", 5)


def _join(member_id: str) -> JoinGroupRequest:
    subscription = ConsumerProtocolSubscription(0, ["t"], b"").encode()
    return join_request(member_id, metadata=subscription)


async def _member_of_g(s: Services) -> tuple[str, int]:
    first = await _resolved(groups.join_group(s, CTX, _join("")))
    assert first is not None and first.error_code is ErrorCode.member_id_required
    joined = await _resolved(groups.join_group(s, CTX, _join(first.member_id)))
    assert joined is not None and joined.error_code is ErrorCode.none
    member, generation = joined.member_id, joined.generation_id
    sync = sync_request(member, generation, b"", protocol=(None, None))
    synced = await _resolved(groups.sync_group(s, CTX, sync))
    assert synced is not None and synced.error_code is ErrorCode.none
    return member, generation


async def test_a_live_group_keeps_offsets_of_subscribed_topics_only() -> None:
    s = await _services()
    try:
        await s.catalog.create(PulsarTopic(NS, "u", "u"), 1, {})
        member, generation = await _member_of_g(s)
        commit = commit_request("g", {"t": [0], "u": [0]}, generation, member, 3, "")
        committed = await _resolved(offsets.offset_commit(s, CTX, offsets.Commit(commit)))
        assert all(p.error_code is ErrorCode.none for t in committed.topics for p in t.partitions)
        asked = delete_offsets_request("g", {"t": [0], "u": [0]})
        deleted = await _resolved(offsets.offset_delete(s, CTX, asked))
        codes = {t.name: t.partitions[0].error_code for t in deleted.topics}
        assert codes == {"t": ErrorCode.group_subscribed_to_topic, "u": ErrorCode.none}
        assert s.groups is not None
        remaining = s.groups.offsets.of("g")
        assert {tp.topic for tp in remaining} == {"t"}

        assert await groups_leave(s, member) == [ErrorCode.none]
        emptied = await _resolved(offsets.offset_delete(s, CTX, asked))
        assert {t.name: t.partitions[0].error_code for t in emptied.topics} == {
            "t": ErrorCode.none,
            "u": ErrorCode.none,
        }
        assert s.groups.offsets.of("g") == {}
    finally:
        await close_services(s)


async def groups_leave(s: Services, member: str) -> list[ErrorCode]:
    assert s.groups is not None
    return await s.groups.classic.leave("g", [(member, None)])
