"""OffsetDelete as Kafka answers it: a live consumer group keeps the offsets of
topics its members subscribe to and loses the others; an Empty group loses all."""

from __future__ import annotations

import datetime
from typing import Any

from kafka.coordinator.assignors.abstract import ConsumerProtocolSubscription

from kop.api import groups, offsets
from kop.api.context import RequestContext, Services
from kop.protocol.errors import ErrorCode
from kop.storage.naming import PulsarTopic
from tests.unit.test_build_strict import NS, _ns, _resolved, _services, close_services

CTX = RequestContext(NS, "test", 5)


def _join(member_id: str) -> Any:
    subscription = ConsumerProtocolSubscription(0, ["t"], b"").encode()
    return _ns(
        group_id="g",
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[_ns(name="range", metadata=subscription)],
        reason=None,
        session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=30),
    )


async def _member_of_g(s: Services) -> tuple[str, int]:
    first = await _resolved(groups.join_group(s, CTX, _join("")))
    assert first is not None and first["error_code"] is ErrorCode.member_id_required
    joined = await _resolved(groups.join_group(s, CTX, _join(first["member_id"])))
    assert joined is not None and joined["error_code"] is ErrorCode.none
    member, generation = joined["member_id"], joined["generation_id"]
    sync = _ns(
        group_id="g",
        generation_id=generation,
        member_id=member,
        group_instance_id=None,
        assignments=[_ns(member_id=member, assignment=b"")],
    )
    synced = await _resolved(groups.sync_group(s, CTX, sync))
    assert synced is not None and synced["error_code"] is ErrorCode.none
    return member, generation


def _partition(topic: str) -> Any:
    part = _ns(
        partition_index=0, committed_offset=3, committed_leader_epoch=-1, committed_metadata=""
    )
    return _ns(name=topic, partitions=[part])


async def test_a_live_group_keeps_offsets_of_subscribed_topics_only() -> None:
    s = await _services()
    try:
        await s.catalog.create(PulsarTopic(NS, "u", "u"), 1, {})
        member, generation = await _member_of_g(s)
        commit = _ns(
            group_id="g",
            generation_id_or_member_epoch=generation,
            member_id=member,
            group_instance_id=None,
            topics=[_partition("t"), _partition("u")],
        )
        committed = await offsets.offset_commit(s, CTX, commit)
        assert all(
            p["error_code"] is ErrorCode.none for t in committed["topics"] for p in t["partitions"]
        )
        asked = _ns(
            group_id="g",
            topics=[
                _ns(name="t", partitions=[_ns(partition_index=0)]),
                _ns(name="u", partitions=[_ns(partition_index=0)]),
            ],
        )
        deleted = await offsets.offset_delete(s, CTX, asked)
        codes = {t["name"]: t["partitions"][0]["error_code"] for t in deleted["topics"]}
        assert codes == {"t": ErrorCode.group_subscribed_to_topic, "u": ErrorCode.none}
        assert s.groups is not None
        remaining = s.groups.offsets.of("g")
        assert {tp.topic for tp in remaining} == {"t"}

        assert groups_leave(s, member) == [ErrorCode.none]
        emptied = await offsets.offset_delete(s, CTX, asked)
        assert {t["name"]: t["partitions"][0]["error_code"] for t in emptied["topics"]} == {
            "t": ErrorCode.none,
            "u": ErrorCode.none,
        }
        assert s.groups.offsets.of("g") == {}
    finally:
        await close_services(s)


def groups_leave(s: Services, member: str) -> list[ErrorCode]:
    assert s.groups is not None
    return s.groups.leave("g", [(member, None)])
