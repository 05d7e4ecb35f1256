"""The hand-written Produce answer writer (kop/protocol/produce_writer.py) writes what
kio's generic writer writes, byte for byte, for every Produce version kop serves:
header, record errors, error messages, append times, throttle time, and (left to kio)
the tagged fields of KIP-951. A difference here is an answer a client misreads."""

from __future__ import annotations

import datetime
import importlib
import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from kop.protocol.messages import ApiKey, RequestHeader, encode_response, is_supported

VERSIONS = [v for v in range(3, 14) if is_supported(ApiKey.PRODUCE, v)]
I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.none() | st.text(max_size=12)


def _module(version: int) -> Any:
    return importlib.import_module(f"kio.schema.produce.v{version}.response")


def _kio_bytes(version: int, correlation_id: int, answer: Any) -> bytes:
    cls = type(answer)
    header_cls = cls.__header_schema__
    out = io.BytesIO()
    entity_writer(header_cls)(out, header_cls(correlation_id=correlation_id))
    entity_writer(cls)(out, answer)
    return out.getvalue()


@st.composite
def answers(draw: st.DrawFn, version: int) -> Any:
    m = _module(version)
    fields: dict[str, Any] = {}

    def partition() -> Any:
        p: dict[str, Any] = {
            "index": draw(I32),
            "error_code": draw(st.sampled_from(list(ErrorCode))),
            "base_offset": draw(I64),
            "log_append_time": draw(
                st.none()
                | st.integers(0, 2**42).map(
                    lambda ms: datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
                )
            ),
        }
        if version >= 5:
            p["log_start_offset"] = draw(I64)
        if version >= 8:
            p["record_errors"] = tuple(
                m.BatchIndexAndErrorMessage(
                    batch_index=draw(I32), batch_index_error_message=draw(TEXT)
                )
                for _ in range(draw(st.integers(0, 2)))
            )
            p["error_message"] = draw(TEXT)
        if version >= 10 and draw(st.booleans()):
            p["current_leader"] = m.LeaderIdAndEpoch(leader_id=draw(I32), leader_epoch=draw(I32))
        return m.PartitionProduceResponse(**p)

    fields["responses"] = tuple(
        m.TopicProduceResponse(
            # long names too: a length of 127 or more is a two-byte varint
            name=draw(st.text(max_size=10) | st.text(min_size=120, max_size=300)),
            partition_responses=tuple(partition() for _ in range(draw(st.integers(0, 3)))),
        )
        for _ in range(draw(st.integers(0, 3)))
    )
    fields["throttle_time"] = datetime.timedelta(milliseconds=draw(st.integers(0, 2**31 - 1)))
    if version >= 10 and draw(st.booleans()):
        fields["node_endpoints"] = (
            m.NodeEndpoint(node_id=draw(I32), host=draw(st.text(max_size=8)), port=9092, rack=None),
        )
    return m.ProduceResponse(**fields)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=150, deadline=None)
@given(data=st.data(), correlation_id=I32)
def test_a_produce_answer_is_written_as_kio_writes_it(
    version: int, data: st.DataObject, correlation_id: int
) -> None:
    answer = data.draw(answers(version))
    header = RequestHeader(ApiKey.PRODUCE, version, correlation_id, "client")
    assert encode_response(header, answer) == _kio_bytes(version, correlation_id, answer)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_value_out_of_range_is_refused_as_kio_refuses_it(version: int) -> None:
    m = _module(version)
    part = {"index": 2**31, "error_code": ErrorCode.none, "base_offset": 0, "log_append_time": None}
    if version >= 5:
        part["log_start_offset"] = -1
    if version >= 8:
        part.update(record_errors=(), error_message=None)
    answer = m.ProduceResponse(
        responses=(
            m.TopicProduceResponse(
                name="t", partition_responses=(m.PartitionProduceResponse(**part),)
            ),
        ),
        throttle_time=datetime.timedelta(0),
    )
    header = RequestHeader(ApiKey.PRODUCE, version, 1, "client")
    with pytest.raises(Exception) as ours:
        encode_response(header, answer)
    with pytest.raises(Exception) as kios:
        _kio_bytes(version, 1, answer)
    assert type(ours.value) is type(kios.value)
