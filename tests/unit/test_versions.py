"""The handler seam's conversions (kop/protocol/versions.py): a request of any version
reads as the newest class with nothing lost, and an answer in the newest class writes at
every version as Kafka's generated code would (ignorable fields dropped, anything else a
version cannot carry refused)."""

from __future__ import annotations

import dataclasses
import datetime
import io
import typing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.join_group.v0.response import JoinGroupResponse as JoinGroupV0
from kio.schema.join_group.v9.response import JoinGroupResponse as JoinGroupV9
from kio.schema.produce.v3.response import ProduceResponse as ProduceV3
from kio.schema.produce.v12.response import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from kio.schema.types import TopicName
from kio.serial import entity_writer
from kio.static.primitive import Records, TZAware, i32, i64

from kop.protocol.errors import ErrorCode
from kop.protocol.messages import SUPPORTED_VERSIONS, ApiKey, request_schema, response_schema
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import (
    Unrepresentable,
    downgrade,
    newest_request,
    newest_response,
    upgrade,
)

st.register_type_strategy(Records, st.binary(max_size=16).map(Records))
st.register_type_strategy(
    TZAware,
    st.integers(0, 2**32).map(
        lambda sec: TZAware.parse(datetime.datetime.fromtimestamp(sec, tz=datetime.UTC))
    ),
)

# Where Kafka reshaped a message, older versions hold fields the newest lacks: their
# routes convert those parts themselves (kop/api/routes.py `up`/`down`).
RESHAPED = {
    ApiKey.METADATA, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR,
    ApiKey.LEAVE_GROUP, ApiKey.DELETE_TOPICS, ApiKey.ADD_PARTITIONS_TO_TXN,
}  # fmt: skip
CASES = [
    (api, v)
    for api, (lo, hi) in sorted(SUPPORTED_VERSIONS.items())
    for v in range(lo, hi + 1)
    if api not in RESHAPED
]


def _encoded(message: object) -> bytes:
    out = io.BytesIO()
    entity_writer(type(message))(out, message)
    return out.getvalue()


@pytest.mark.parametrize(("api", "version"), CASES, ids=str)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_request_reads_as_the_newest_class_and_keeps_every_field(
    api: ApiKey, version: int, data: st.DataObject
) -> None:
    old = data.draw(st.from_type(request_schema(api, version)))
    new = upgrade(old, newest_request(api))
    assert type(new) is newest_request(api)
    # Back down again it is the request the client sent: nothing it said was lost.
    assert downgrade(new, type(old), api) == old
    _encoded(new)  # and the defaults it took are values the wire can carry


@pytest.mark.parametrize(("api", "version"), CASES, ids=str)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_an_answer_a_version_can_carry_writes_at_that_version_unchanged(
    api: ApiKey, version: int, data: st.DataObject
) -> None:
    meant = data.draw(st.from_type(response_schema(api, version)))
    newest = upgrade(meant, newest_response(api))
    written = downgrade(newest, response_schema(api, version), api)
    assert written == meant
    _encoded(written)


def _join(skip_assignment: bool) -> JoinGroupV9:
    return JoinGroupV9(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
        generation_id=i32(1), protocol_type=None, protocol_name="range",
        leader="m", skip_assignment=skip_assignment, member_id="m", members=(),
    )  # fmt: skip


def test_a_value_a_version_cannot_carry_is_refused_not_dropped() -> None:
    """JoinGroup's skip_assignment (v9+) is not ignorable: a v0 answer that had to say
    it would say something else."""
    assert type(downgrade(_join(False), JoinGroupV0, ApiKey.JOIN_GROUP)) is JoinGroupV0
    with pytest.raises(Unrepresentable, match="skip_assignment"):
        downgrade(_join(True), JoinGroupV0, ApiKey.JOIN_GROUP)


def test_an_ignorable_value_is_dropped_where_the_version_lacks_it() -> None:
    """Produce's log_start_offset (v5+) is ignorable, as Kafka's schema says."""
    part = PartitionProduceResponse(
        index=i32(0),
        error_code=ErrorCode.none,
        base_offset=i64(7),
        log_start_offset=i64(3),
        record_errors=(),
    )
    answer = ProduceResponse(
        responses=(TopicProduceResponse(name=TopicName("t"), partition_responses=(part,)),),
        throttle_time=NO_THROTTLE,
    )
    old = downgrade(answer, ProduceV3, ApiKey.PRODUCE)
    assert old.responses[0].partition_responses[0].base_offset == 7
    assert "log_start_offset" not in {
        f.name for f in dataclasses.fields(type(old.responses[0].partition_responses[0]))
    }


def test_every_route_reads_and_answers_the_newest_version_kop_serves() -> None:
    """A route's classes are imported by name (kio.schema.<api>.v<N>): raising a version
    in SUPPORTED_VERSIONS must move its handler to the new classes, or fail here."""
    from kop.api.dispatch import ROUTES

    assert ROUTES
    for api, route in ROUTES.items():
        assert route.api is api
        request: Any = route.request
        if not request.__module__.startswith("kio."):  # kop's own, holding the newest
            request = typing.get_type_hints(request)["request"]  # (OffsetCommit's Commit)
        assert request is newest_request(api), api
        assert route.response is newest_response(api), api
