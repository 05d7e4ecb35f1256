"""Kafka requests and responses on top of kio's generated schemas: the API keys and
the versions kop serves, request frames decoded into kio's class of their version, and
answers encoded. Handlers read and answer in the newest version kop serves; converting
between versions is `versions.py`'s job."""

from __future__ import annotations

import io
import struct
import typing
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.protocol import Entity

from kop.protocol.bounds import FrameShapeError, check_request
from kop.protocol.frame_pieces import Frame, FramePieces
from kop.protocol.produce_writer import header_writer, produce_writer


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


# Exactly the versions kop implements. Lower bounds follow kio (Kafka 4.x's
# baseline); upper bounds stop before features kop does not implement yet
# (topic ids in Fetch v13 and Produce v13).
SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    # v10 adds KIP-951's optional leader hints to the answer (not sent), v11 allows
    # TRANSACTION_ABORTABLE, v12 is transaction version 2's (an implicit add)
    ApiKey.PRODUCE: (3, 12),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (1, 12),
    ApiKey.OFFSET_COMMIT: (2, 9),  # v10: topic ids
    ApiKey.OFFSET_FETCH: (1, 9),  # v10: topic ids
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),  # v6: per-group error messages
    ApiKey.LIST_GROUPS: (0, 5),
    # KIP-848 (v1: the member id is the client's own, and regex subscriptions)
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    # KIP-932 (v1 is the first Kafka 4.1+ clients speak; ShareFetch and ShareAcknowledge
    # v2 add renewed locks, KIP-1222, and the record-limit acquire mode, KIP-1206)
    ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
    ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
    ApiKey.SHARE_FETCH: (1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: (1, 2),
    # kafka-share-groups' offsets (v1 of Describe adds the lag, KIP-1226)
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.API_VERSIONS: (0, 4),
    # v0 handshakes send the SASL tokens as raw frames, which Kafka 4 clients never do
    ApiKey.SASL_HANDSHAKE: (1, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 5),
    ApiKey.TXN_OFFSET_COMMIT: (0, 5),
    ApiKey.WRITE_TXN_MARKERS: (1, 2),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 2),
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    # one replica per partition (kop.api.replicas)
    ApiKey.ALTER_REPLICA_LOG_DIRS: (1, 2),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
}

# What ApiVersions advertises where it is wider than what kop serves. Kafka 4.x
# advertises Produce from v0 and closes the connection on a v0-v2 request
# (KAFKA-18659): older librdkafka turns compression off, without a word, when a
# broker's Produce range does not start at 0.
ADVERTISED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    **SUPPORTED_VERSIONS,
    ApiKey.PRODUCE: (0, SUPPORTED_VERSIONS[ApiKey.PRODUCE][1]),
}

_HEAD = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True)
class Request:
    header: RequestHeader
    body: Any


class UnsupportedVersion(Exception):
    """The API key or version is not one kop implements."""

    def __init__(self, header: RequestHeader) -> None:
        super().__init__(f"api {header.api_key} v{header.api_version} not supported")
        self.header = header


class MalformedRequest(Exception):
    """The frame does not decode; `header` is set when at least the header parsed."""

    def __init__(self, reason: str, header: RequestHeader | None = None) -> None:
        super().__init__(reason)
        self.header = header


def is_supported(api_key: int, version: int) -> bool:
    try:
        low, high = SUPPORTED_VERSIONS[ApiKey(api_key)]
    except ValueError:
        return False
    return low <= version <= high


def peek_header(frame: bytes | memoryview) -> RequestHeader:
    """Read key, version and correlation id without trusting the rest of the frame."""
    if len(frame) < _HEAD.size:
        raise MalformedRequest(f"frame of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _HEAD.unpack_from(frame, 0)
    return RequestHeader(api_key, api_version, correlation_id, None)


# kio resolves a schema's module by name on every call (6 us); these are per request.
_request_schema = cache(load_request_schema)
_response_schema = cache(load_response_schema)


def decode_request(frame: bytes | memoryview) -> Request:
    head = peek_header(frame)
    if not is_supported(head.api_key, head.api_version):
        raise UnsupportedVersion(head)
    schema = _request_schema(head.api_key, head.api_version)
    header_schema = typing.cast(type[Entity], schema.__header_schema__)
    try:
        check_request(header_schema, schema, frame)
    except FrameShapeError as exc:
        raise MalformedRequest(f"cannot decode {schema.__name__}: {exc}", head) from None
    try:
        header, used = _reader(header_schema)(frame, 0)
        body, _ = _reader(schema)(frame, used)
    except Exception as exc:  # kio raises several types for truncated or invalid input
        raise MalformedRequest(f"cannot decode {schema.__name__}: {exc!r}", head) from exc
    # Bytes after the fields the version defines are ignored, as Kafka's brokers do:
    # librdkafka 2.16 sends Metadata v12 with 3 of them.
    return Request(
        RequestHeader(head.api_key, head.api_version, head.correlation_id, header.client_id),
        body,
    )


def request_schema(api_key: int, version: int) -> type[Entity]:
    return typing.cast(type[Entity], _request_schema(api_key, version))


def response_schema(api_key: int, version: int) -> type[Entity]:
    return typing.cast(type[Entity], _response_schema(api_key, version))


def encode_response(header: RequestHeader, response: Entity) -> bytes:
    """The response's header and body (a frame's payload)."""
    out = io.BytesIO()
    _write_response(out, header, response)
    return out.getvalue()


def encode_response_frame(header: RequestHeader, response: Entity) -> Frame:
    """The whole frame, its size prefix written in place; a Fetch answer in pieces, its
    records not copied (`FramePieces`)."""
    kind = type(response)
    if _pieced(kind):
        pieces = FramePieces()
        _header_writer(kind)(pieces, header.correlation_id)
        _writer(kind)(pieces, response)
        return pieces.frame()
    out = io.BytesIO()
    out.write(_NO_SIZE)
    _write_response(out, header, response)
    with out.getbuffer() as view:
        _SIZE.pack_into(view, 0, len(view) - _SIZE.size)
    return out.getvalue()


def _write_response(out: io.BytesIO, header: RequestHeader, response: Entity) -> None:
    kind = type(response)
    _header_writer(kind)(out, header.correlation_id)
    _writer(kind)(out, response)


_SIZE = struct.Struct(">i")
_NO_SIZE = bytes(_SIZE.size)


@cache
def _reader(cls: type[Entity]) -> Any:
    return entity_reader(cls)


@cache
def _writer(cls: type[Entity]) -> Any:
    generic = entity_writer(cls)
    kind = getattr(cls, "__type__", None)
    if getattr(cls, "__api_key__", None) == ApiKey.PRODUCE and kind is EntityType.response:
        return produce_writer(cls, generic)  # per produce: by hand (D36)
    return generic


@cache
def _pieced(cls: type[Entity]) -> bool:
    """Answers that carry records: written in pieces."""
    kind = getattr(cls, "__type__", None)
    return kind is EntityType.response and getattr(cls, "__api_key__", None) in _RECORDS


_RECORDS = frozenset({ApiKey.FETCH, ApiKey.SHARE_FETCH})


@cache
def _header_writer(cls: type[Entity]) -> Any:
    header_schema = cls.__header_schema__  # type: ignore[attr-defined]
    return header_writer(bool(header_schema.__flexible__))
