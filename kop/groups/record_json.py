"""What every record of the offsets topic shares: escaped key fields, a versioned JSON
value, and the checks that turn anything unreadable into MalformedRecord (and only
that), so a loader can skip and count such a record without stopping. The records
themselves: kop/groups/offsets_codec.py (offsets, classic groups, pending offsets),
kop/groups/consumer/records.py (KIP-848 consumer groups) and
kop/groups/share/stored.py (share groups)."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
from typing import Any, Generic, TypeVar

from kop.storage.types import OutgoingMessage

VERSION = 1
H = TypeVar("H")
M = TypeVar("M")
PARTITION = re.compile(r"0|-?[1-9][0-9]{0,18}")


class MalformedRecord(Exception):
    """A record of the offsets topic that this kop cannot read."""


def escape(name: str) -> str:
    return name.replace("%", "%25").replace("|", "%7C")


def unescape(field: str) -> str:
    out = field.replace("%7C", "|").replace("%25", "%")
    if escape(out) != field:  # a stray or non-canonical escape
        raise MalformedRecord(f"bad escape in key field {field!r}")
    return out


def message(key: str, value: dict[str, Any]) -> OutgoingMessage:
    payload = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return OutgoingMessage(payload, {}, key, None)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def value(payload: bytes) -> dict[str, Any]:
    try:
        value = json.loads(payload.decode())
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, absurd nesting
        raise MalformedRecord(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise MalformedRecord("not a JSON object")
    if field(value, "v", int) != VERSION:
        raise MalformedRecord(f"unknown version {value['v']!r}")
    return value


def field(
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


def unb64(text: object) -> bytes:
    if not isinstance(text, str):
        raise MalformedRecord(f"not base64 text: {text!r}")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MalformedRecord(f"bad base64: {exc}") from None


@dataclasses.dataclass(slots=True)
class HeadsAndMembers(Generic[H, M]):
    """One kind of group's records of one offsets partition, as they are read back: each
    group's head and its members' records (KIP-848 and share groups keep them alike). A
    head's tombstone takes its members with it."""

    heads: dict[str, H] = dataclasses.field(default_factory=dict)
    members: dict[str, dict[str, M]] = dataclasses.field(default_factory=dict)

    def put_head(self, group: str, head: H | None) -> None:
        if head is None:
            self.heads.pop(group, None)
            self.members.pop(group, None)
        else:
            self.heads[group] = head

    def put_member(self, group: str, member_id: str, member: M | None) -> None:
        of_group = self.members.setdefault(group, {})
        if member is None:
            of_group.pop(member_id, None)
        else:
            of_group[member_id] = member
