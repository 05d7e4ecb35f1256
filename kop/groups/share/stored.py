"""A KIP-932 share group in the offsets topic, beside the classic and KIP-848 groups'
records in the partition of its id, as Kafka keeps a share group's metadata, members
and assignments in its own offsets topic:

    s|{group}             the group: {"v": 1, "epoch": 5, "assignment_epoch": 5,
                          "topics": [[name, topic id, partitions]],
                          "offset_topics": [names whose start offsets were set]}
    sm|{group}|{member}   one member: {"v": 1, "epoch": 5, "topics": [...], "rack": null,
                          "client_id": ..., "client_host": ...,
                          "assignment": {"<topic id>": [partition, ...]},
                          "target": {...}}

One record per member, so a heartbeat that changes one member rewrites one record; a
heartbeat that changes nothing durable (the usual one: only the session's deadline
moves) writes nothing. A member that leaves is a tombstone; a deleted group's members'
tombstones come before its own. A member's session starts again when its group is read
back (Kafka restarts its timers on load too); a member record whose group record is
missing is ignored (the group was deleted).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kop.groups.consumer.group import TopicMeta
from kop.groups.consumer.member import Assignment
from kop.groups.consumer.records import parts_json, read_parts, read_topics, topics_json
from kop.groups.record_json import (
    VERSION,
    HeadsAndMembers,
    MalformedRecord,
    escape,
    field,
    message,
    unescape,
    value,
)
from kop.groups.share.group import ShareGroup, ShareMember
from kop.storage.types import OutgoingMessage

GROUP_TAG = "s"
MEMBER_TAG = "sm"


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    """What of a share group is durable, as it was before a change."""

    epoch: int
    assignment_epoch: int
    topics: tuple[TopicMeta, ...]
    offset_topics: frozenset[str]
    members: dict[str, ShareMember]  # deadlines zeroed: a session is not durable
    targets: dict[str, Assignment]


@dataclass(frozen=True, slots=True)
class ShareHeadRecord:
    group: str
    head: ShareSnapshot | None  # members and targets empty; None: a tombstone


@dataclass(frozen=True, slots=True)
class ShareMemberRecord:
    group: str
    member_id: str
    member: tuple[ShareMember, Assignment] | None  # with its target; None: a tombstone


def snapshot(g: ShareGroup | None) -> ShareSnapshot | None:
    if g is None:
        return None
    return ShareSnapshot(
        g.epoch, g.assignment_epoch, tuple(g.topics.values()), frozenset(g.offset_topics),
        {k: replace(m, deadline_ms=0) for k, m in g.members.items()}, dict(g.targets),
    )  # fmt: skip


def restored(group_id: str, s: ShareSnapshot, deadline_ms: Callable[[str], int]) -> ShareGroup:
    """A group as it was at `s`, its members' sessions ending at `deadline_ms(member)`."""
    return ShareGroup(
        group_id, epoch=s.epoch, assignment_epoch=s.assignment_epoch,
        members={k: replace(m, deadline_ms=deadline_ms(k)) for k, m in s.members.items()},
        topics={t.name: t for t in s.topics}, targets=dict(s.targets),
        offset_topics=set(s.offset_topics),
    )  # fmt: skip


def head_key(group: str) -> str:
    return f"{GROUP_TAG}|{escape(group)}"


def member_key(group: str, member_id: str) -> str:
    return f"{MEMBER_TAG}|{escape(group)}|{escape(member_id)}"


def changes(old: ShareSnapshot | None, new: ShareGroup) -> list[OutgoingMessage]:
    """The records that turn `old` into `new` (none when nothing durable changed)."""
    now = snapshot(new)
    assert now is not None
    before = old.members if old is not None else {}
    targets = old.targets if old is not None else {}
    out = [
        _member(new.group_id, m, now.targets.get(k, {}))
        for k, m in now.members.items()
        if before.get(k) != m or targets.get(k) != now.targets.get(k, {})
    ]
    out += [
        OutgoingMessage(None, {}, member_key(new.group_id, gone), None)
        for gone in before
        if gone not in now.members
    ]
    if out or old is None or _head_of(old) != _head_of(now):
        out.insert(0, _head(new.group_id, now))
    return out


def tombstones(g: ShareGroup) -> list[OutgoingMessage]:
    """The group deleted: members first, so no member outlives its group record."""
    out = [OutgoingMessage(None, {}, member_key(g.group_id, m), None) for m in g.members]
    return [*out, OutgoingMessage(None, {}, head_key(g.group_id), None)]


def _head_of(s: ShareSnapshot) -> tuple[object, ...]:
    return (s.epoch, s.assignment_epoch, s.topics, s.offset_topics)


def _head(group: str, s: ShareSnapshot) -> OutgoingMessage:
    return message(head_key(group), {
        "v": VERSION, "epoch": s.epoch, "assignment_epoch": s.assignment_epoch,
        "topics": topics_json(s.topics), "offset_topics": sorted(s.offset_topics),
    })  # fmt: skip


def _member(group: str, m: ShareMember, target: Assignment) -> OutgoingMessage:
    return message(member_key(group, m.member_id), {
        "v": VERSION, "epoch": m.epoch, "topics": list(m.topics), "rack": m.rack,
        "client_id": m.client_id, "client_host": m.client_host,
        "assignment": parts_json(m.assignment), "target": parts_json(target),
    })  # fmt: skip


# -- decode ---------------------------------------------------------------------------


def decode(
    tag: str, fields: list[str], payload: bytes | None
) -> ShareHeadRecord | ShareMemberRecord | None:
    """The record, or None when the key is not a share group's."""
    if tag == GROUP_TAG and len(fields) == 1:
        group = unescape(fields[0])
        return ShareHeadRecord(group, None if not payload else _read_head(value(payload)))
    if tag == MEMBER_TAG and len(fields) == 2:
        group, member_id = unescape(fields[0]), unescape(fields[1])
        if not payload:
            return ShareMemberRecord(group, member_id, None)
        return ShareMemberRecord(group, member_id, _read_member(member_id, value(payload)))
    return None


def _strings(v: dict[str, Any], name: str) -> list[str]:
    items: list[object] = field(v, name, list)
    strings = [t for t in items if isinstance(t, str)]
    if len(strings) != len(items):
        raise MalformedRecord(f"an item of {name!r} is not a string")
    return strings


def _read_head(v: dict[str, Any]) -> ShareSnapshot:
    return ShareSnapshot(
        field(v, "epoch", int, bits=32), field(v, "assignment_epoch", int, bits=32),
        read_topics(v), frozenset(_strings(v, "offset_topics")), {}, {},
    )  # fmt: skip


def _read_member(member_id: str, v: dict[str, Any]) -> tuple[ShareMember, Assignment]:
    member = ShareMember(
        member_id, field(v, "epoch", int, bits=32), tuple(_strings(v, "topics")),
        field(v, "rack", str, nullable=True), field(v, "client_id", str),
        field(v, "client_host", str), read_parts(field(v, "assignment", dict)), 0,
    )  # fmt: skip
    return member, read_parts(field(v, "target", dict))


@dataclass(slots=True)
class LoadedShareGroups(HeadsAndMembers[ShareSnapshot, tuple[ShareMember, Assignment]]):
    """The share groups one offsets partition held, as its records are read back."""

    def apply(self, record: ShareHeadRecord | ShareMemberRecord) -> None:
        if isinstance(record, ShareHeadRecord):
            self.put_head(record.group, record.head)
        else:
            self.put_member(record.group, record.member_id, record.member)

    def groups(self, deadline_ms: Callable[[str, str], int]) -> list[ShareGroup]:
        """Each group with its members (a member without its group is dropped), whose
        sessions end at `deadline_ms(group, member)`."""
        out = []
        for group, head in self.heads.items():
            kept = self.members.get(group, {})
            s = replace(
                head,
                members={k: m for k, (m, _t) in kept.items()},
                targets={k: t for k, (_m, t) in kept.items()},
            )
            out.append(restored(group, s, functools.partial(deadline_ms, group)))
        return out
