"""The connection's protocol core (kop/server/kafka_connection.py), without a socket:
what each request means in each phase, as Kafka's SaslServerAuthenticator decides."""

from __future__ import annotations

import io
import struct

import pytest
from kio.index import load_request_schema
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.serial import entity_writer

from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ApiKey
from kop.sasl.session import Answer
from kop.server.closing import BAD_REQUEST, UNAUTHENTICATED
from kop.server.kafka_connection import (
    TABLE,
    Authenticate,
    Close,
    Handle,
    KafkaConnection,
    Kind,
    Phase,
    Reply,
)


def _frame(api: ApiKey, version: int, body: object) -> bytes:
    schema = load_request_schema(int(api), version)
    header_cls = schema.__header_schema__
    out = io.BytesIO()
    header = header_cls(
        request_api_key=int(api), request_api_version=version, correlation_id=7,
        client_id="test",
    )  # fmt: skip
    entity_writer(header_cls)(out, header)
    entity_writer(schema)(out, body)
    return out.getvalue()


VERSIONS = _frame(
    ApiKey.API_VERSIONS, 3,
    ApiVersionsRequest(client_software_name="t", client_software_version="1"),
)  # fmt: skip
HANDSHAKE = _frame(ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism="PLAIN"))
METADATA = _frame(
    ApiKey.METADATA, 12,
    MetadataRequest(topics=None, allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False),
)  # fmt: skip


def _core(authenticating: bool) -> KafkaConnection:
    return KafkaConnection(lambda: authenticating)


def test_the_table_decides_every_request_of_every_phase_a_frame_is_read_in() -> None:
    readable = [p for p in Phase if p is not Phase.CLOSING]
    assert set(TABLE) == {(p, k) for p in readable for k in Kind}


@pytest.mark.parametrize(
    ("authenticating", "frame", "event"),
    [
        (True, VERSIONS, Handle),
        (True, HANDSHAKE, Authenticate),
        (True, METADATA, Close),
        (False, VERSIONS, Handle),
        (False, HANDSHAKE, Authenticate),
        (False, METADATA, Handle),
    ],
)
def test_before_authentication_only_api_versions_and_sasl_pass(
    authenticating: bool, frame: bytes, event: type
) -> None:
    got = _core(authenticating).receive(frame)
    assert type(got) is event
    if isinstance(got, Close):
        assert got.reason == UNAUTHENTICATED
        assert got.header is not None and got.header.api_key == ApiKey.METADATA


def test_a_too_new_api_versions_is_answered_at_v0_with_unsupported_version() -> None:
    frame = bytearray(VERSIONS)
    struct.pack_into(">h", frame, 2, 99)  # a version kop does not know
    got = _core(False).receive(bytes(frame))
    assert isinstance(got, Reply)
    assert got.header.api_version == 0 and got.malformed is None
    assert got.body.error_code == ErrorCode.unsupported_version


def test_a_malformed_request_with_a_top_level_error_is_answered_invalid_request() -> None:
    got = _core(False).receive(HANDSHAKE[:-3])  # cut short; its answer has error_code
    assert isinstance(got, Reply)
    assert got.malformed is not None
    assert got.body.error_code == ErrorCode.invalid_request


@pytest.mark.parametrize("frame", [b"\x00\x01", METADATA[:-3]], ids=["no header", "no error"])
def test_a_frame_kop_cannot_answer_within_the_protocol_closes(frame: bytes) -> None:
    """No request header, or a malformed request whose answer has no top-level error
    code to say so in (Metadata)."""
    got = _core(False).receive(frame)
    assert isinstance(got, Close) and got.reason == BAD_REQUEST


def test_a_refused_exchange_is_the_last_answer() -> None:
    core = _core(True)
    assert core.authenticated(Answer({}, close=False)) is None
    assert core.ending is None and core.phase is Phase.AUTHENTICATING
    ended = core.authenticated(Answer({}, close=True, reason="bad password"))
    assert ended is not None and ended.reason == UNAUTHENTICATED
    assert core.phase is Phase.CLOSING
    again = core.receive(VERSIONS)  # nothing is read after it
    assert isinstance(again, Close) and "bad password" in again.why
