"""The records of the offsets topic: pure encode/decode, no I/O.

Each record is one Pulsar message: its partition key is the record key, its
payload the value. Pulsar's compaction keeps each key's latest message, so the
latest record of a key is its value, and a tombstone (a null payload; an empty
one counts too, as compaction treats it the same) makes compaction forget it.

Keys (UTF-8 text, fields joined by '|'):

    o|{group}|{topic}|{partition}          a committed offset of a group
    g|{group}                              a group's metadata
    t|{producer}|{group}|{topic}|{partition}
                                           an offset committed in a transaction of
                                           producer id {producer}, not yet ended

A transactional offset has an offset's value; when its transaction commits, the
offset record and the pending one's tombstone are written in one entry (an abort
writes the tombstone only).

`{group}` and `{topic}` are the names with '%' written as '%25' and '|' as
'%7C', nothing else changed, so every '|' in a key separates fields and common
names read as themselves. `{partition}` is a decimal integer (no leading zeros,
at most 19 digits). A key that is not exactly what encoding would produce
(unknown tag, wrong field count, a stray '%' escape, "007") is malformed.

Values are UTF-8 JSON objects with a format version `v` (now 1; any other value
is malformed, i.e. written by a kop this one does not understand):

    offset: {"v": 1, "offset": 42, "leader_epoch": -1, "metadata": "" | null,
             "commit_ms": 1700000000000, "expire_ms": null | int}
    group:  {"v": 1, "protocol_type": "consumer" | null, "generation": 3,
             "protocol": "range" | null, "leader": "m-1" | null,
             "state_ms": 1700000000000, "members": [
               {"member_id": "m-1", "group_instance_id": null | "i-1",
                "client_id": "c", "client_host": "/10.0.0.1",
                "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000,
                "protocols": [["range", "<base64 subscription metadata>"]],
                "assignment": "<base64 assignment>"}]}

The group id lives in the key only (it is not repeated in the value). Times are
milliseconds since the epoch; bytes are standard base64 with padding.

`decode` raises `MalformedRecord`, and only that, for anything it cannot read,
so the loader can skip and count such a record without stopping.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

from kop.groups.types import CommittedOffset, GroupMetadata, MemberMetadata, TopicPartition
from kop.storage.types import OutgoingMessage

VERSION = 1
_OFFSET = "o"
_GROUP = "g"
_PENDING = "t"
_PARTITION = re.compile(r"0|-?[1-9][0-9]{0,18}")


class MalformedRecord(Exception):
    """A record of the offsets topic that this kop cannot read."""


@dataclass(frozen=True, slots=True)
class OffsetRecord:
    """A committed offset of `group` for `tp`; `offset` None: a tombstone."""

    group: str
    tp: TopicPartition
    offset: CommittedOffset | None


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """The metadata of `group`; `meta` None: a tombstone."""

    group: str
    meta: GroupMetadata | None


@dataclass(frozen=True, slots=True)
class PendingRecord:
    """An offset of `group` for `tp` committed in a transaction of `producer_id`,
    not yet ended; `offset` None: a tombstone (the transaction ended)."""

    producer_id: int
    group: str
    tp: TopicPartition
    offset: CommittedOffset | None


Record = OffsetRecord | GroupRecord | PendingRecord


# -- keys ---------------------------------------------------------------------


def offset_key(group: str, tp: TopicPartition) -> str:
    return f"{_OFFSET}|{_escape(group)}|{_escape(tp.topic)}|{tp.partition}"


def pending_key(producer_id: int, group: str, tp: TopicPartition) -> str:
    return f"{_PENDING}|{producer_id}|{_escape(group)}|{_escape(tp.topic)}|{tp.partition}"


def group_key(group: str) -> str:
    return f"{_GROUP}|{_escape(group)}"


def _escape(name: str) -> str:
    return name.replace("%", "%25").replace("|", "%7C")


def _unescape(field: str) -> str:
    out = field.replace("%7C", "|").replace("%25", "%")
    if _escape(out) != field:  # a stray or non-canonical escape
        raise MalformedRecord(f"bad escape in key field {field!r}")
    return out


# -- encode -------------------------------------------------------------------


def encode_offset(group: str, tp: TopicPartition, offset: CommittedOffset) -> OutgoingMessage:
    value = {
        "v": VERSION,
        "offset": offset.offset,
        "leader_epoch": offset.leader_epoch,
        "metadata": offset.metadata,
        "commit_ms": offset.commit_ms,
        "expire_ms": offset.expire_ms,
    }
    return _message(offset_key(group, tp), value)


def encode_pending(
    producer_id: int, group: str, tp: TopicPartition, offset: CommittedOffset
) -> OutgoingMessage:
    message = encode_offset(group, tp, offset)
    return OutgoingMessage(message.payload, {}, pending_key(producer_id, group, tp), None)


def tombstone_pending(producer_id: int, group: str, tp: TopicPartition) -> OutgoingMessage:
    return OutgoingMessage(None, {}, pending_key(producer_id, group, tp), None)


def encode_group(meta: GroupMetadata) -> OutgoingMessage:
    value = {
        "v": VERSION,
        "protocol_type": meta.protocol_type,
        "generation": meta.generation,
        "protocol": meta.protocol,
        "leader": meta.leader,
        "state_ms": meta.state_ms,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "session_timeout_ms": m.session_timeout_ms,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "protocols": [[name, _b64(data)] for name, data in m.protocols],
                "assignment": _b64(m.assignment),
            }
            for m in meta.members
        ],
    }
    return _message(group_key(meta.group_id), value)


def tombstone_offset(group: str, tp: TopicPartition) -> OutgoingMessage:
    return OutgoingMessage(None, {}, offset_key(group, tp), None)


def tombstone_group(group: str) -> OutgoingMessage:
    return OutgoingMessage(None, {}, group_key(group), None)


def _message(key: str, value: dict[str, Any]) -> OutgoingMessage:
    payload = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return OutgoingMessage(payload, {}, key, None)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# -- decode -------------------------------------------------------------------


def decode(partition_key: str, payload: bytes | None) -> Record:
    """The record a message holds; a None or empty payload is a tombstone."""
    tag, sep, rest = partition_key.partition("|")
    fields = rest.split("|")
    if sep and tag == _GROUP and len(fields) == 1:
        group = _unescape(fields[0])
        return GroupRecord(group, None if not payload else _group(group, _value(payload)))
    if sep and tag == _OFFSET and len(fields) == 3:
        if not _PARTITION.fullmatch(fields[2]):
            raise MalformedRecord(f"bad partition in key {partition_key!r}")
        group, tp = _unescape(fields[0]), TopicPartition(_unescape(fields[1]), int(fields[2]))
        return OffsetRecord(group, tp, None if not payload else _offset(_value(payload)))
    if sep and tag == _PENDING and len(fields) == 4:
        if not (_PARTITION.fullmatch(fields[0]) and _PARTITION.fullmatch(fields[3])):
            raise MalformedRecord(f"bad number in key {partition_key!r}")
        group, tp = _unescape(fields[1]), TopicPartition(_unescape(fields[2]), int(fields[3]))
        offset = None if not payload else _offset(_value(payload))
        return PendingRecord(int(fields[0]), group, tp, offset)
    raise MalformedRecord(f"unknown key {partition_key!r}")


def _value(payload: bytes) -> dict[str, Any]:
    try:
        value = json.loads(payload.decode())
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, absurd nesting
        raise MalformedRecord(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise MalformedRecord("not a JSON object")
    if _field(value, "v", int) != VERSION:
        raise MalformedRecord(f"unknown version {value['v']!r}")
    return value


def _offset(v: dict[str, Any]) -> CommittedOffset:
    return CommittedOffset(
        offset=_field(v, "offset", int),
        leader_epoch=_field(v, "leader_epoch", int, bits=32),
        metadata=_field(v, "metadata", str, nullable=True),
        commit_ms=_field(v, "commit_ms", int),
        expire_ms=_field(v, "expire_ms", int, nullable=True),
    )


def _group(group: str, v: dict[str, Any]) -> GroupMetadata:
    members = _field(v, "members", list)
    return GroupMetadata(
        group_id=group,
        protocol_type=_field(v, "protocol_type", str, nullable=True),
        generation=_field(v, "generation", int, bits=32),
        protocol=_field(v, "protocol", str, nullable=True),
        leader=_field(v, "leader", str, nullable=True),
        state_ms=_field(v, "state_ms", int),
        members=tuple(_member(m) for m in members),
    )


def _member(m: object) -> MemberMetadata:
    if not isinstance(m, dict):
        raise MalformedRecord("a member is not a JSON object")
    protocols = []
    for p in _field(m, "protocols", list):
        if not (isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)):
            raise MalformedRecord(f"bad protocol entry {p!r}")
        protocols.append((p[0], _unb64(p[1])))
    return MemberMetadata(
        member_id=_field(m, "member_id", str),
        group_instance_id=_field(m, "group_instance_id", str, nullable=True),
        client_id=_field(m, "client_id", str),
        client_host=_field(m, "client_host", str),
        session_timeout_ms=_field(m, "session_timeout_ms", int, bits=32),
        rebalance_timeout_ms=_field(m, "rebalance_timeout_ms", int, bits=32),
        protocols=tuple(protocols),
        assignment=_unb64(_field(m, "assignment", str)),
    )


def _field(
    v: dict[str, Any], name: str, kind: type, *, nullable: bool = False, bits: int = 64
) -> Any:
    """`v[name]`, checked to be a `kind` (JSON has no int/bool distinction Python keeps);
    an int within the signed `bits`-bit range of its Kafka field, so that every
    value read can be answered on the wire."""
    if name not in v:
        raise MalformedRecord(f"missing {name!r}")
    x = v[name]
    if x is None and nullable:
        return None
    if not isinstance(x, kind) or isinstance(x, bool):
        raise MalformedRecord(f"{name!r} is not a {kind.__name__}: {x!r:.40}")
    if isinstance(x, int) and not -(1 << (bits - 1)) <= x < 1 << (bits - 1):
        raise MalformedRecord(f"{name!r} is not an int{bits}: {x!r:.40}")
    return x


def _unb64(text: object) -> bytes:
    if not isinstance(text, str):
        raise MalformedRecord(f"not base64 text: {text!r}")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MalformedRecord(f"bad base64: {exc}") from None
