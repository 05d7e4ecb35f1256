"""The group and offset routes' own converters, where Kafka reshaped a message: an old
version's request reads as the newest class with what it said, and the newest answer
writes in the old shape, or is refused where that shape cannot say it all."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.find_coordinator.v0.request import FindCoordinatorRequest as FindV0
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest as FindV3
from kio.schema.find_coordinator.v6.response import Coordinator, FindCoordinatorResponse
from kio.schema.leave_group.v2.request import LeaveGroupRequest as LeaveV2
from kio.schema.leave_group.v5.response import LeaveGroupResponse, MemberResponse
from kio.schema.offset_commit.v4.request import OffsetCommitRequest as CommitV4
from kio.schema.offset_commit.v5.request import OffsetCommitRequest as CommitV5
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest as FetchV7
from kio.schema.offset_fetch.v7.request import OffsetFetchRequestTopic as FetchTopicV7
from kio.schema.offset_fetch.v9.response import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from kio.schema.types import BrokerId, GroupId, TopicName
from kio.static.primitive import i8, i32, i64, i64Timedelta

from kop.api.dispatch import ROUTES
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import Unrepresentable


def test_find_coordinator_v0_to_v3_name_one_key_answered_at_the_top_level() -> None:
    route = ROUTES[ApiKey.FIND_COORDINATOR]
    assert route.read(FindV0(key="g"), 0).coordinator_keys == ("g",)
    read = route.read(FindV3(key="tx", key_type=i8(1)), 3)
    assert (read.coordinator_keys, read.key_type) == (("tx",), 1)
    refused = Coordinator(
        key="g", node_id=BrokerId(-1), host="", port=i32(-1),
        error_code=ErrorCode.not_coordinator, error_message="elsewhere",
    )  # fmt: skip
    answer = FindCoordinatorResponse(throttle_time=NO_THROTTLE, coordinators=(refused,))
    v0 = route.write(answer, 0)
    assert (v0.error_code, v0.node_id, v0.port) == (ErrorCode.not_coordinator, -1, -1)
    assert not hasattr(v0, "error_message")  # v0 has none: ignorable, as Kafka says
    assert route.write(answer, 3).error_message == "elsewhere"
    two = FindCoordinatorResponse(throttle_time=NO_THROTTLE, coordinators=(refused, refused))
    assert len(route.write(two, 4).coordinators) == 2
    with pytest.raises(Unrepresentable):
        route.write(two, 3)


def test_leave_group_v0_to_v2_name_one_member_answered_by_the_top_level_code() -> None:
    route = ROUTES[ApiKey.LEAVE_GROUP]
    read = route.read(LeaveV2(group_id=GroupId("g"), member_id="m"), 2)
    assert [(m.member_id, m.group_instance_id) for m in read.members] == [("m", None)]

    def member(code: ErrorCode) -> MemberResponse:
        return MemberResponse(member_id="m", group_instance_id=None, error_code=code)

    def answer(top: ErrorCode, *members: MemberResponse) -> LeaveGroupResponse:
        return LeaveGroupResponse(throttle_time=NO_THROTTLE, error_code=top, members=members)

    gone = answer(ErrorCode.none, member(ErrorCode.unknown_member_id))
    assert route.write(gone, 2).error_code is ErrorCode.unknown_member_id
    assert route.write(gone, 3).error_code is ErrorCode.none
    refused = answer(ErrorCode.not_coordinator)
    assert route.write(refused, 0).error_code is ErrorCode.not_coordinator
    with pytest.raises(Unrepresentable):
        route.write(answer(ErrorCode.none, member(ErrorCode.none), member(ErrorCode.none)), 2)


def test_offset_fetch_v1_to_v7_name_one_group_answered_at_the_top_level() -> None:
    route = ROUTES[ApiKey.OFFSET_FETCH]
    asked = FetchTopicV7(name=TopicName("t"), partition_indexes=(i32(0),))
    read = route.read(FetchV7(group_id=GroupId("g"), topics=(asked,), require_stable=True), 7)
    assert read.require_stable
    ((group_id, topics),) = [(g.group_id, g.topics) for g in read.groups]
    assert group_id == "g" and topics is not None
    assert [(t.name, t.partition_indexes) for t in topics] == [("t", (0,))]
    every = route.read(FetchV7(group_id=GroupId("g"), topics=None, require_stable=False), 7)
    assert every.groups[0].topics is None

    part = OffsetFetchResponsePartitions(
        partition_index=i32(0), committed_offset=i64(5), committed_leader_epoch=i32(2),
        metadata="m", error_code=ErrorCode.none,
    )  # fmt: skip
    group = OffsetFetchResponseGroup(
        group_id=GroupId("g"),
        topics=(OffsetFetchResponseTopics(name=TopicName("t"), partitions=(part,)),),
        error_code=ErrorCode.unstable_offset_commit,
    )
    answer = OffsetFetchResponse(throttle_time=NO_THROTTLE, groups=(group,))
    v7 = route.write(answer, 7)
    assert v7.error_code is ErrorCode.unstable_offset_commit
    assert v7.topics[0].partitions[0].committed_leader_epoch == 2
    v4 = route.write(answer, 4)  # no leader epoch before v5: ignorable, as Kafka says
    assert v4.topics[0].partitions[0].committed_offset == 5
    assert not hasattr(v4.topics[0].partitions[0], "committed_leader_epoch")
    assert not hasattr(route.write(answer, 1), "error_code")  # none before v2: ignorable
    twice = OffsetFetchResponse(throttle_time=NO_THROTTLE, groups=(group, group))
    assert len(route.write(twice, 8).groups) == 2
    with pytest.raises(Unrepresentable):
        route.write(twice, 7)


def test_offset_commit_v2_to_v4_retention_time_reaches_the_handler() -> None:
    route = ROUTES[ApiKey.OFFSET_COMMIT]

    def v4(ms: int) -> CommitV4:
        return CommitV4(
            group_id=GroupId("g"), generation_id_or_member_epoch=i32(-1), member_id="",
            retention_time=i64Timedelta.parse(datetime.timedelta(milliseconds=ms)), topics=(),
        )  # fmt: skip

    read = route.read(v4(60_000), 4)
    assert (read.request.group_id, read.retention_ms) == ("g", 60_000)
    assert route.read(v4(-1), 4).retention_ms is None  # the broker's retention
    v5 = CommitV5(group_id=GroupId("g"), generation_id_or_member_epoch=i32(-1), member_id="",
                  topics=())  # fmt: skip
    assert route.read(v5, 5).retention_ms is None
