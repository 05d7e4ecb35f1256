"""The smaller checks Kafka's classic coordinator makes, in its order: member and
generation before the group's state; SyncGroup v5's protocol type and name;
OffsetCommit v2-4's retention time; OffsetDelete on a live group of another
protocol type."""

from __future__ import annotations

import datetime
from typing import Any

from kop.api import groups, offsets
from kop.api.context import RequestContext
from kop.groups.coordinator import PARKED
from kop.groups.rebalance import SyncResult
from kop.groups.types import GroupState, TopicPartition
from kop.protocol.errors import ErrorCode
from tests.unit.test_build_strict import NS, _ns, _resolved, _services, close_services
from tests.unit.test_coordinator_rules import Driver, _join, _stable_pair


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
    try:
        part = _ns(partition_index=0, committed_offset=3, committed_metadata="")
        request = _ns(
            group_id="solo", generation_id_or_member_epoch=-1, member_id="",
            retention_time=datetime.timedelta(seconds=60),
            topics=[_ns(name="t", partitions=[part])],
        )  # fmt: skip
        await offsets.offset_commit(s, CTX_V2, request)
        (committed,) = s.groups.offsets.of("solo").values()
        assert committed.expire_ms == committed.commit_ms + 60_000
        g = s.groups.coordinator.groups["solo"]
        tp = TopicPartition("t", 0)
        assert s.groups.offsets.expired("solo", g, committed.commit_ms + 59_999) == []
        assert s.groups.offsets.expired("solo", g, committed.commit_ms + 60_000) == [tp]
        default = _ns(**{**vars(request), "retention_time": datetime.timedelta(milliseconds=-1)})
        await offsets.offset_commit(s, CTX_V2, default)
        assert s.groups.offsets.of("solo")[tp].expire_ms is None
    finally:
        await close_services(s)


def _connect_join(member_id: str) -> Any:
    return _ns(
        group_id="workers", member_id=member_id, group_instance_id=None, protocol_type="connect",
        protocols=[_ns(name="sessioned", metadata=b"worker")], reason=None,
        session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=30),
    )  # fmt: skip


async def test_offset_delete_on_a_live_group_of_another_protocol_is_non_empty_group() -> None:
    s = await _services()
    assert s.groups is not None
    ctx = RequestContext(NS, "test", 5)
    try:
        first = await _resolved(groups.join_group(s, ctx, _connect_join("")))
        assert first is not None
        joined = await _resolved(groups.join_group(s, ctx, _connect_join(first["member_id"])))
        assert joined is not None and joined["error_code"] is ErrorCode.none
        asked = _ns(group_id="workers", topics=[_ns(name="t", partitions=[_ns(partition_index=0)])])
        answer = await offsets.offset_delete(s, ctx, asked)
        assert (answer["error_code"], answer["topics"]) == (ErrorCode.non_empty_group, [])
    finally:
        await close_services(s)


async def test_offset_commit_v9_to_an_unknown_group_is_group_id_not_found() -> None:
    """Kafka: ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND from v9 on."""
    s = await _services()
    assert s.groups is not None
    try:
        part = _ns(partition_index=0, committed_offset=3, committed_leader_epoch=-1,
                   committed_metadata="")  # fmt: skip
        request = _ns(
            group_id="nobody", generation_id_or_member_epoch=4, member_id="m",
            group_instance_id=None, topics=[_ns(name="t", partitions=[part])],
        )  # fmt: skip
        expected = ((8, ErrorCode.illegal_generation), (9, ErrorCode.group_id_not_found))
        for version, code in expected:
            answer = await offsets.offset_commit(s, RequestContext(NS, "test", version), request)
            assert answer["topics"][0]["partitions"][0]["error_code"] is code, version
    finally:
        await close_services(s)
