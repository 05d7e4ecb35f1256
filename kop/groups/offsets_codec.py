"""The records of the offsets topic: pure encode/decode, no I/O.

Each record is one Pulsar message: its partition key is the record key, its
payload the value. Pulsar's compaction keeps each key's latest message, so the
latest record of a key is its value, and a tombstone (a null payload; an empty
one counts too, as compaction treats it the same) makes compaction forget it.

Keys (UTF-8 text, fields joined by '|'):

    o|{group}|{topic}|{partition}          a committed offset of a group
    g|{group}                              a classic group's metadata
    c|{group}, m|{group}|{member}          a KIP-848 consumer group and its members
                                           (kop/groups/consumer/records.py)
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

from dataclasses import dataclass
from typing import Any

from kop.groups.consumer import records as consumer_records
from kop.groups.record_json import (
    PARTITION,
    VERSION,
    MalformedRecord,
    b64,
    escape,
    field,
    message,
    unb64,
    unescape,
    value,
)
from kop.groups.share import stored as share_records
from kop.groups.types import CommittedOffset, GroupMetadata, MemberMetadata, TopicPartition
from kop.storage.types import OutgoingMessage

_OFFSET = "o"
_GROUP = "g"
_PENDING = "t"


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


Record = (
    OffsetRecord
    | GroupRecord
    | PendingRecord
    | consumer_records.HeadRecord
    | consumer_records.MemberRecord
    | share_records.ShareHeadRecord
    | share_records.ShareMemberRecord
)


# -- keys ---------------------------------------------------------------------


def offset_key(group: str, tp: TopicPartition) -> str:
    return f"{_OFFSET}|{escape(group)}|{escape(tp.topic)}|{tp.partition}"


def pending_key(producer_id: int, group: str, tp: TopicPartition) -> str:
    return f"{_PENDING}|{producer_id}|{escape(group)}|{escape(tp.topic)}|{tp.partition}"


def group_key(group: str) -> str:
    return f"{_GROUP}|{escape(group)}"


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
    return message(offset_key(group, tp), value)


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
                "protocols": [[name, b64(data)] for name, data in m.protocols],
                "assignment": b64(m.assignment),
            }
            for m in meta.members
        ],
    }
    return message(group_key(meta.group_id), value)


def tombstone_offset(group: str, tp: TopicPartition) -> OutgoingMessage:
    return OutgoingMessage(None, {}, offset_key(group, tp), None)


def tombstone_group(group: str) -> OutgoingMessage:
    return OutgoingMessage(None, {}, group_key(group), None)


# -- decode -------------------------------------------------------------------


def decode(partition_key: str, payload: bytes | None) -> Record:
    """The record a message holds; a None or empty payload is a tombstone."""
    tag, sep, rest = partition_key.partition("|")
    fields = rest.split("|")
    if sep and tag == _GROUP and len(fields) == 1:
        group = unescape(fields[0])
        return GroupRecord(group, None if not payload else _group(group, value(payload)))
    if sep and tag == _OFFSET and len(fields) == 3:
        if not PARTITION.fullmatch(fields[2]):
            raise MalformedRecord(f"bad partition in key {partition_key!r}")
        group, tp = unescape(fields[0]), TopicPartition(unescape(fields[1]), int(fields[2]))
        return OffsetRecord(group, tp, None if not payload else _offset(value(payload)))
    if sep and tag == _PENDING and len(fields) == 4:
        if not (PARTITION.fullmatch(fields[0]) and PARTITION.fullmatch(fields[3])):
            raise MalformedRecord(f"bad number in key {partition_key!r}")
        group, tp = unescape(fields[1]), TopicPartition(unescape(fields[2]), int(fields[3]))
        offset = None if not payload else _offset(value(payload))
        return PendingRecord(int(fields[0]), group, tp, offset)
    found: Record | None = None
    if sep:
        found = consumer_records.decode(tag, fields, payload) or share_records.decode(
            tag, fields, payload
        )
    if found is None:
        raise MalformedRecord(f"unknown key {partition_key!r}")
    return found


def _offset(v: dict[str, Any]) -> CommittedOffset:
    return CommittedOffset(
        offset=field(v, "offset", int),
        leader_epoch=field(v, "leader_epoch", int, bits=32),
        metadata=field(v, "metadata", str, nullable=True),
        commit_ms=field(v, "commit_ms", int),
        expire_ms=field(v, "expire_ms", int, nullable=True),
    )


def _group(group: str, v: dict[str, Any]) -> GroupMetadata:
    members = field(v, "members", list)
    return GroupMetadata(
        group_id=group,
        protocol_type=field(v, "protocol_type", str, nullable=True),
        generation=field(v, "generation", int, bits=32),
        protocol=field(v, "protocol", str, nullable=True),
        leader=field(v, "leader", str, nullable=True),
        state_ms=field(v, "state_ms", int),
        members=tuple(_member(m) for m in members),
    )


def _member(m: object) -> MemberMetadata:
    if not isinstance(m, dict):
        raise MalformedRecord("a member is not a JSON object")
    protocols = []
    for p in field(m, "protocols", list):
        if not (isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)):
            raise MalformedRecord(f"bad protocol entry {p!r}")
        protocols.append((p[0], unb64(p[1])))
    return MemberMetadata(
        member_id=field(m, "member_id", str),
        group_instance_id=field(m, "group_instance_id", str, nullable=True),
        client_id=field(m, "client_id", str),
        client_host=field(m, "client_host", str),
        session_timeout_ms=field(m, "session_timeout_ms", int, bits=32),
        rebalance_timeout_ms=field(m, "rebalance_timeout_ms", int, bits=32),
        protocols=tuple(protocols),
        assignment=unb64(field(m, "assignment", str)),
    )
