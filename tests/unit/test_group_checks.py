"""The smaller checks Kafka's classic coordinator makes, in its order: member and
generation before the group's state; SyncGroup v5's protocol type and name;
OffsetCommit v2-4's retention time; OffsetDelete on a live group of another
protocol type."""

from __future__ import annotations

import dataclasses
import datetime

from kio.schema.join_group.v9.request import JoinGroupRequest
from kio.schema.offset_commit.v2.request import OffsetCommitRequest as CommitV2
from kio.schema.offset_commit.v2.request import OffsetCommitRequestPartition as CommitPartitionV2
from kio.schema.offset_commit.v2.request import OffsetCommitRequestTopic as CommitTopicV2
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64, i64Timedelta

from kop.api import groups, offsets
from kop.api.context import RequestContext
from kop.api.dispatch import ROUTES
from kop.groups.coordinator import PARKED
from kop.groups.rebalance import SyncResult
from kop.groups.types import GroupState, TopicPartition
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ApiKey
from tests.unit.test_coordinator_rules import Driver, _join, _stable_pair
from tests.unit.test_every_version import (
    NS,
    _resolved,
    _services,
    close_services,
    commit_request,
    delete_offsets_request,
    join_request,
)


def _completing(d: Driver) -> tuple[str, int]:
    """a and b Stable, then a rejoins and both do: CompletingRebalance, no sync yet.
    Returns b's member id and the generation before."""
    a, b = _stable_pair(d)
    assert d.join(_join(a.member_id), "a2") is PARKED
    assert d.join(_join(b.member_id), "b2") is PARKED
    assert d.state() is GroupState.COMPLETING_REBALANCE
    return b.member_id, b.generation


def test_a_stale_or_unknown_committer_learns_that_before_the_rebalance() -> None:
    d = Driver()
    b, old = _completing(d)
    assert d.c.commit_allowed("g", old, b, None, d.now) is ErrorCode.illegal_generation
    assert d.c.commit_allowed("g", old + 1, "ghost", None, d.now) is ErrorCode.unknown_member_id
    assert d.c.commit_allowed("g", old + 1, b, "host-x", d.now) is ErrorCode.unknown_member_id
    assert d.c.commit_allowed("g", old + 1, b, None, d.now) is ErrorCode.rebalance_in_progress
    assert d.c.commit_allowed("g", -1, "", None, d.now) is ErrorCode.unknown_member_id


def test_sync_v5_with_another_protocol_type_or_name_is_inconsistent() -> None:
    d = Driver()
    b, old = _completing(d)
    for protocol in (("connect", "range"), ("consumer", "sticky")):
        got = d.c.sync("g", old + 1, b, None, {}, "s", d.now, protocol)
        assert got == SyncResult(ErrorCode.inconsistent_group_protocol), protocol
    stale = d.c.sync("g", old, b, None, {}, "s0", d.now, ("connect", "range"))
    assert stale == SyncResult(ErrorCode.illegal_generation)  # member and generation first
    assert d.c.sync("g", old + 1, b, None, {}, "s1", d.now, ("consumer", "range")) is PARKED


CTX_V2 = RequestContext(NS, "test", 2)


async def test_offset_commit_v2_retention_time_expires_the_offsets() -> None:
    s = await _services()
    assert s.groups is not None
    route = ROUTES[ApiKey.OFFSET_COMMIT]
    try:
        part = CommitPartitionV2(
            partition_index=i32(0), committed_offset=i64(3), committed_metadata=""
        )
        request = CommitV2(
            group_id=GroupId("solo"), generation_id_or_member_epoch=i32(-1), member_id="",
            retention_time=i64Timedelta.parse(datetime.timedelta(seconds=60)),
            topics=(CommitTopicV2(name=TopicName("t"), partitions=(part,)),),
        )  # fmt: skip
        await offsets.offset_commit(s, CTX_V2, route.read(request, 2))
        (committed,) = s.groups.offsets.of("solo").values()
        assert committed.expire_ms == committed.commit_ms + 60_000
        g = s.groups.coordinator.groups["solo"]
        tp = TopicPartition("t", 0)
        assert s.groups.offsets.expired("solo", g, committed.commit_ms + 59_999) == []
        assert s.groups.offsets.expired("solo", g, committed.commit_ms + 60_000) == [tp]
        default = dataclasses.replace(
            request, retention_time=i64Timedelta.parse(datetime.timedelta(milliseconds=-1))
        )
        await offsets.offset_commit(s, CTX_V2, route.read(default, 2))
        assert s.groups.offsets.of("solo")[tp].expire_ms is None
    finally:
        await close_services(s)


def _connect_join(member_id: str) -> JoinGroupRequest:
    return join_request(
        member_id, "connect", group="workers", metadata=b"worker", protocol="sessioned"
    )


async def test_offset_delete_on_a_live_group_of_another_protocol_is_non_empty_group() -> None:
    s = await _services()
    assert s.groups is not None
    ctx = RequestContext(NS, "test", 5)
    try:
        first = await _resolved(groups.join_group(s, ctx, _connect_join("")))
        assert first is not None
        joined = await _resolved(groups.join_group(s, ctx, _connect_join(first.member_id)))
        assert joined is not None and joined.error_code is ErrorCode.none
        asked = delete_offsets_request("workers", {"t": [0]})
        answer = await _resolved(offsets.offset_delete(s, ctx, asked))
        assert (answer.error_code, answer.topics) == (ErrorCode.non_empty_group, ())
    finally:
        await close_services(s)


async def test_offset_commit_v9_to_an_unknown_group_is_group_id_not_found() -> None:
    """Kafka: ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND from v9 on."""
    s = await _services()
    assert s.groups is not None
    try:
        request = offsets.Commit(commit_request("nobody", {"t": [0]}, 4, "m", 3, ""))
        expected = ((8, ErrorCode.illegal_generation), (9, ErrorCode.group_id_not_found))
        for version, code in expected:
            ctx = RequestContext(NS, "test", version)
            answer = await _resolved(offsets.offset_commit(s, ctx, request))
            assert answer.topics[0].partitions[0].error_code is code, version
    finally:
        await close_services(s)
