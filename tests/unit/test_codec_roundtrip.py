"""Every API and version kop advertises: requests decode to what a client encoded,
and responses kop encodes decode (with a client's reader) to what kop meant."""

from __future__ import annotations

import datetime
import io
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import Records, TZAware, i64Timedelta

from kop.protocol.error_replies import top_level_error_response
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import (
    SUPPORTED_VERSIONS,
    MalformedRequest,
    RequestHeader,
    UnsupportedVersion,
    decode_request,
    encode_response,
)

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
# Kafka timestamps are instants; kop builds them in UTC (kio's type holds whole seconds). (kio's own
# strategy may pick a zone with an ambiguous wall time, which compares unequal after
# a lossless round trip.)
st.register_type_strategy(
    TZAware,
    st.integers(0, 2**32).map(
        lambda sec: TZAware.parse(datetime.datetime.fromtimestamp(sec, tz=datetime.UTC))
    ),
)

# OffsetCommit v2-4's retention_time: a client sends -1 (the broker's retention) or
# milliseconds; kio's own strategy draws spans its reader cannot hold.
st.register_type_strategy(
    i64Timedelta,
    st.integers(-1, 10**13).map(lambda ms: i64Timedelta(datetime.timedelta(milliseconds=ms))),
)

CASES = [(int(k), v) for k, (lo, hi) in SUPPORTED_VERSIONS.items() for v in range(lo, hi + 1)]


def _client_frame(api_key: int, version: int, correlation_id: int, body: object) -> bytes:
    schema = load_request_schema(api_key, version)
    header_cls = schema.__header_schema__
    out = io.BytesIO()
    fields = {
        "request_api_key": api_key,
        "request_api_version": version,
        "correlation_id": correlation_id,
        "client_id": "test-client",
    }
    entity_writer(header_cls)(out, header_cls(**fields))
    entity_writer(schema)(out, body)
    return out.getvalue()


@pytest.mark.parametrize(("api_key", "version"), CASES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_request_roundtrip(
    api_key: int, version: int, correlation_id: int, data: st.DataObject
) -> None:
    body = data.draw(st.from_type(load_request_schema(api_key, version)))
    request = decode_request(_client_frame(api_key, version, correlation_id, body))
    assert request.header.api_key == api_key
    assert request.header.api_version == version
    assert request.header.correlation_id == correlation_id
    assert request.header.client_id == "test-client"
    assert request.body == body


@pytest.mark.parametrize(("api_key", "version"), CASES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_response_roundtrip(
    api_key: int, version: int, correlation_id: int, data: st.DataObject
) -> None:
    schema = load_response_schema(api_key, version)
    body = data.draw(st.from_type(schema))
    payload = encode_response(RequestHeader(api_key, version, correlation_id, None), body)
    header, used = entity_reader(schema.__header_schema__)(payload, 0)
    assert header.correlation_id == correlation_id
    decoded, size = entity_reader(schema)(payload, used)
    assert used + size == len(payload)
    assert decoded == body


def test_unknown_version_is_reported_with_its_header() -> None:
    frame = struct.pack(">hhih", 0, 99, 7, -1)
    with pytest.raises(UnsupportedVersion) as info:
        decode_request(frame)
    assert info.value.header.correlation_id == 7


def test_unknown_api_key_is_unsupported() -> None:
    with pytest.raises(UnsupportedVersion):
        decode_request(struct.pack(">hhih", 999, 0, 1, -1))


@pytest.mark.parametrize("garbage", [b"", b"\x00", b"\x00\x03\x00"])
def test_short_frames_are_malformed(garbage: bytes) -> None:
    with pytest.raises(MalformedRequest):
        decode_request(garbage)


def test_truncated_body_is_malformed_but_header_known() -> None:
    body = load_request_schema(3, 12)(
        topics=None, allow_auto_topic_creation=True, include_topic_authorized_operations=False
    )
    frame = _client_frame(3, 12, 5, body)
    with pytest.raises(MalformedRequest) as info:
        decode_request(frame[:-2])
    assert info.value.header is not None and info.value.header.correlation_id == 5


@pytest.mark.parametrize("extra", [b"\x00", b"\x00\x01\x00", b"\xff" * 64])
def test_bytes_after_the_defined_fields_are_ignored_as_kafka_does(extra: bytes) -> None:
    # librdkafka 2.16's Metadata v12 carries 3 such bytes; kop used to close the connection.
    body = load_request_schema(3, 12)(
        topics=None, allow_auto_topic_creation=True, include_topic_authorized_operations=False
    )
    request = decode_request(_client_frame(3, 12, 7, body) + extra)
    assert request.header.correlation_id == 7
    assert request.body.topics is None and request.body.allow_auto_topic_creation is True


def test_error_reply_exists_for_apis_with_top_level_error() -> None:
    reply = top_level_error_response(RequestHeader(22, 4, 1, None), ErrorCode.invalid_request)
    assert reply is not None
    assert reply.error_code == ErrorCode.invalid_request  # type: ignore[attr-defined]
    # Produce has no top-level error code: the only honest answer is closing.
    assert top_level_error_response(RequestHeader(0, 9, 1, None), ErrorCode.invalid_request) is None


@pytest.mark.parametrize(("api_key", "version"), CASES)
def test_every_error_reply_can_be_encoded(api_key: int, version: int) -> None:
    # JoinGroup v0-6's reply to a malformed request once held a null protocol_name,
    # which those versions cannot carry: kop failed to answer and dropped the client.
    header = RequestHeader(api_key, version, 9, None)
    reply = top_level_error_response(header, ErrorCode.invalid_request)
    if reply is not None:
        payload = encode_response(header, reply)
        assert payload[:4] == (9).to_bytes(4, "big")
