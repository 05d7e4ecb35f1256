"""A KIP-848 consumer group in the offsets topic (beside the records of
kop/groups/offsets_codec.py, in the same partition as the group's offsets):

    c|{group}               the group: {"v": 1, "epoch": 5, "assignment_epoch": 5,
                            "state_ms": ..., "topics": [[name, topic id, partitions]],
                            "regexes": {"<regex>": [names it matched]}}
    m|{group}|{member}      one member: its subscription, epochs, state, assigned and
                            revoking partitions and its target assignment
                            ({"<topic id>": [partition, ...]}), and the epoch it
                            was given each held partition at ("assigned_at":
                            [[topic id, partition, epoch]]; a record without it
                            holds them all at its epoch); a member of the
                            classic protocol (online upgrade) also its
                            "classic": {"session_timeout_ms": n, "protocols":
                            [[name, base64 metadata]]}

One record per member, so a heartbeat that moves one member rewrites one record, not
the group; a member that leaves is a tombstone. A heartbeat's records go in one entry
(stored all or nothing). A member record whose group record is missing is ignored on
load (the group was deleted: its tombstones came first).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kop.groups.consumer.group import ConsumerGroup, TopicMeta
from kop.groups.consumer.member import Assignment, ClassicMeta, ConsumerMember, MemberState
from kop.groups.record_json import (
    VERSION,
    HeadsAndMembers,
    MalformedRecord,
    b64,
    escape,
    field,
    message,
    unb64,
    unescape,
    value,
)
from kop.storage.types import OutgoingMessage

GROUP_TAG = "c"
MEMBER_TAG = "m"


@dataclass(frozen=True, slots=True)
class GroupHead:
    epoch: int
    assignment_epoch: int
    state_ms: int
    topics: tuple[TopicMeta, ...]
    matches: dict[str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class HeadRecord:
    group: str
    head: GroupHead | None  # None: a tombstone


@dataclass(frozen=True, slots=True)
class MemberRecord:
    group: str
    member_id: str
    member: tuple[ConsumerMember, Assignment] | None  # with its target; None: a tombstone


def head_key(group: str) -> str:
    return f"{GROUP_TAG}|{escape(group)}"


def member_key(group: str, member_id: str) -> str:
    return f"{MEMBER_TAG}|{escape(group)}|{escape(member_id)}"


def changes(old: ConsumerGroup | None, new: ConsumerGroup) -> list[OutgoingMessage]:
    """The records that turn `old` into `new` (none when nothing durable changed):
    the head, changed members, tombstones for members gone."""
    before = old.members if old is not None else {}
    targets = old.targets if old is not None else {}
    out = [
        _member(new.group_id, m, new.targets.get(member_id, {}))
        for member_id, m in new.members.items()
        if before.get(member_id) != m or targets.get(member_id) != new.targets.get(member_id, {})
    ]
    out += [
        OutgoingMessage(None, {}, member_key(new.group_id, gone), None)
        for gone in before
        if gone not in new.members
    ]
    if out or old is None or _head_of(old) != _head_of(new):
        out.insert(0, _head(new))
    return out


def _head_of(g: ConsumerGroup) -> tuple[object, ...]:
    return (g.epoch, g.assignment_epoch, g.state_ms, tuple(g.topics.values()), g.matches)


def tombstones(g: ConsumerGroup) -> list[OutgoingMessage]:
    """The group deleted: members first, so no member outlives its group record."""
    out = [OutgoingMessage(None, {}, member_key(g.group_id, m), None) for m in g.members]
    return [*out, OutgoingMessage(None, {}, head_key(g.group_id), None)]


def _head(g: ConsumerGroup) -> OutgoingMessage:
    return message(head_key(g.group_id), {
        "v": VERSION, "epoch": g.epoch, "assignment_epoch": g.assignment_epoch,
        "state_ms": g.state_ms,
        "topics": topics_json(g.topics.values()),
        "regexes": {r: list(names) for r, names in sorted(g.matches.items())},
    })  # fmt: skip


def _member(group: str, m: ConsumerMember, target: Assignment) -> OutgoingMessage:
    return message(member_key(group, m.member_id), {
        "v": VERSION, "instance_id": m.instance_id, "rack_id": m.rack_id,
        "client_id": m.client_id, "client_host": m.client_host,
        "rebalance_timeout_ms": m.rebalance_timeout_ms, "topics": list(m.topics),
        "regex": m.regex, "assignor": m.assignor, "epoch": m.epoch,
        "previous_epoch": m.previous_epoch, "state": m.state.value,
        "assigned": parts_json(m.assigned), "revoking": parts_json(m.revoking),
        "target": parts_json(target),
        "assigned_at": [[str(t), p, e] for (t, p), e in sorted(m.assigned_at.items())],
        "classic": _classic(m.classic),
    })  # fmt: skip


def _classic(c: ClassicMeta | None) -> dict[str, Any] | None:
    if c is None:
        return None
    protocols = [[name, b64(meta)] for name, meta in c.protocols]
    return {"session_timeout_ms": c.session_timeout_ms, "protocols": protocols}


def parts_json(a: Assignment) -> dict[str, list[int]]:
    return {str(t): sorted(p) for t, p in sorted(a.items()) if p}


# -- decode ---------------------------------------------------------------------------


def decode(tag: str, fields: list[str], payload: bytes | None) -> HeadRecord | MemberRecord | None:
    """The record, or None when the key is not a consumer group's."""
    if tag == GROUP_TAG and len(fields) == 1:
        group = unescape(fields[0])
        return HeadRecord(group, None if not payload else _read_head(value(payload)))
    if tag == MEMBER_TAG and len(fields) == 2:
        group, member_id = unescape(fields[0]), unescape(fields[1])
        if not payload:
            return MemberRecord(group, member_id, None)
        return MemberRecord(group, member_id, _read_member(member_id, value(payload)))
    return None


def read_topics(v: dict[str, Any]) -> tuple[TopicMeta, ...]:
    """A group record's resolved topics ([[name, topic id, partitions]])."""
    topics = []
    for t in field(v, "topics", list):
        if not (isinstance(t, list) and len(t) == 3 and isinstance(t[0], str)):
            raise MalformedRecord(f"bad topic entry {t!r:.60}")
        if not isinstance(t[2], int) or isinstance(t[2], bool) or not 0 < t[2] < 1 << 31:
            raise MalformedRecord(f"bad partition count {t[2]!r:.20}")
        topics.append(TopicMeta(_uuid(t[1]), t[0], t[2]))
    return tuple(topics)


def topics_json(topics: Iterable[TopicMeta]) -> list[list[object]]:
    return [[t.name, str(t.topic_id), t.partitions] for t in topics]


def _read_head(v: dict[str, Any]) -> GroupHead:
    topics = read_topics(v)
    matches = {}
    for regex, names in field(v, "regexes", dict).items():
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise MalformedRecord(f"bad matches of regex {regex!r:.40}")
        matches[regex] = tuple(names)
    return GroupHead(
        field(v, "epoch", int, bits=32), field(v, "assignment_epoch", int, bits=32),
        field(v, "state_ms", int), tuple(topics), matches,
    )  # fmt: skip


def _read_member(member_id: str, v: dict[str, Any]) -> tuple[ConsumerMember, Assignment]:
    topics = field(v, "topics", list)
    if not all(isinstance(t, str) for t in topics):
        raise MalformedRecord("a subscribed topic is not a string")
    try:
        state = MemberState(field(v, "state", str))
    except ValueError:
        raise MalformedRecord(f"unknown member state {v['state']!r:.30}") from None
    member = ConsumerMember(
        member_id,
        instance_id=field(v, "instance_id", str, nullable=True),
        rack_id=field(v, "rack_id", str, nullable=True),
        client_id=field(v, "client_id", str),
        client_host=field(v, "client_host", str),
        rebalance_timeout_ms=field(v, "rebalance_timeout_ms", int, bits=32),
        topics=tuple(topics),
        regex=field(v, "regex", str, nullable=True),
        assignor=field(v, "assignor", str, nullable=True),
        epoch=field(v, "epoch", int, bits=32),
        previous_epoch=field(v, "previous_epoch", int, bits=32),
        state=state,
        assigned=read_parts(field(v, "assigned", dict)),
        revoking=read_parts(field(v, "revoking", dict)),
        assigned_at=_read_assigned_at(v.get("assigned_at", [])),
        classic=_read_classic(v.get("classic")),
    )
    return member, read_parts(field(v, "target", dict))


def _read_classic(v: object) -> ClassicMeta | None:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise MalformedRecord("'classic' is not an object")
    protocols = []
    for row in field(v, "protocols", list):
        if not (isinstance(row, list) and len(row) == 2 and all(isinstance(x, str) for x in row)):
            raise MalformedRecord(f"bad classic protocol {row!r:.60}")
        protocols.append((row[0], unb64(row[1])))
    if not protocols:
        raise MalformedRecord("a classic member without protocols")
    return ClassicMeta(field(v, "session_timeout_ms", int, bits=32), tuple(protocols))


def _read_assigned_at(v: object) -> dict[tuple[uuid.UUID, int], int]:
    if not isinstance(v, list):
        raise MalformedRecord("'assigned_at' is not a list")
    out = {}
    for row in v:
        ok = isinstance(row, list) and len(row) == 3 and all(
            isinstance(x, int) and not isinstance(x, bool) and -(1 << 31) <= x < 1 << 31
            for x in row[1:]
        )  # fmt: skip
        if not ok:
            raise MalformedRecord(f"bad assignment epoch {row!r:.60}")
        out[(_uuid(row[0]), row[1])] = row[2]
    return out


def read_parts(v: Mapping[str, Any]) -> dict[uuid.UUID, frozenset[int]]:
    out = {}
    for topic, parts in v.items():
        ok = isinstance(parts, list) and all(
            isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 1 << 31 for p in parts
        )
        if not ok:
            raise MalformedRecord(f"bad partitions of {topic:.40}")
        out[_uuid(topic)] = frozenset(parts)
    return out


def _uuid(text: object) -> uuid.UUID:
    try:
        if isinstance(text, str):
            return uuid.UUID(text)
    except ValueError:
        pass
    raise MalformedRecord(f"bad topic id {text!r:.40}")


@dataclass(slots=True)
class LoadedConsumerGroups(HeadsAndMembers[GroupHead, tuple[ConsumerMember, Assignment]]):
    """The consumer groups one offsets partition held, as its records are read back."""

    def apply(self, record: HeadRecord | MemberRecord) -> None:
        if isinstance(record, HeadRecord):
            self.put_head(record.group, record.head)
        else:
            self.put_member(record.group, record.member_id, record.member)

    def groups(self) -> list[ConsumerGroup]:
        """Each group with its members (a member without its group is dropped)."""
        out = []
        for group, head in self.heads.items():
            g = ConsumerGroup(
                group, epoch=head.epoch, assignment_epoch=head.assignment_epoch,
                state_ms=head.state_ms, topics={t.name: t for t in head.topics},
                matches=dict(head.matches),
            )  # fmt: skip
            for member, target in self.members.get(group, {}).values():
                g.put(member)
                g.targets[member.member_id] = target
            out.append(g)
        return out
