"""Produce answers and response headers written without kio's generic writer.

Every produce is answered, and clients send thousands a second: kio's writer, made
for every message, checks each value's phantom type and writes each entity's tagged
fields into a buffer of its own, about 14 us for a one-partition Produce answer
(v10) of the ~800 us of CPU a one-record produce costs kop. These write the same bytes
with a few `struct` packs. What they do not know (a tagged field set: a partition's
`current_leader`, the answer's `node_endpoints`) is left to kio's writer, so the
output is kio's in every case; tests/unit/test_produce_writer.py holds them to
that, byte for byte, for every version kop serves.

A hand-written codec is product code (docs/decisions.md D36): kio stays the reference
and the writer of every other message."""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import typing
from collections.abc import Callable
from typing import Any

from kop.protocol.frame_pieces import Writable
from kop.protocol.records import uvarint

_HEAD = struct.Struct(">i")
_PART = struct.Struct(">ihqq")  # index, error code, base offset, log append time
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_NO_TAGS = b"\x00"
_SMALL = [bytes((n,)) for n in range(128)]  # one-byte varints: most counts and lengths

Writer = Callable[[io.BytesIO, Any], None]


def header_writer(flexible: bool) -> Callable[[Writable, int], None]:
    """A response header (v0, or v1 with its empty tagged fields) for a correlation id."""
    tags = _NO_TAGS if flexible else b""

    def write(out: Writable, correlation_id: int) -> None:
        out.write(_HEAD.pack(correlation_id) + tags)

    return write


def produce_writer(cls: type[Any], generic: Writer) -> Writer:
    """The writer of Produce response class `cls` (v3 and later), `generic` (kio's)
    for the answers it does not cover."""
    version: int = cls.__version__
    flexible: bool = cls.__flexible__
    tagged = version >= 10
    leader_default: Any = None
    if tagged:
        part_cls = _field_type(cls, "responses", "partition_responses")
        leader_default = next(
            f.default for f in dataclasses.fields(part_cls) if f.name == "current_leader"
        )
    start = version >= 5
    errors = version >= 8
    count = _uvarint_count if flexible else _i32_count
    string = _compact_string if flexible else _legacy_string
    tags = _NO_TAGS if flexible else b""

    def write(out: io.BytesIO, answer: Any) -> None:
        try:
            data = None if _tags_set(answer) else _bytes(answer)
        except (struct.error, AttributeError, TypeError):
            data = None  # a value out of its type's range: kio's writer says which
        if data is None:
            generic(out, answer)
        else:
            out.write(data)

    def _tags_set(answer: Any) -> bool:
        return tagged and bool(
            answer.node_endpoints
            or any(
                p.current_leader != leader_default
                for t in answer.responses
                for p in t.partition_responses
            )
        )

    def _bytes(answer: Any) -> bytes:
        parts = [count(len(answer.responses))]
        add = parts.append
        for topic in answer.responses:
            add(string(topic.name))
            partitions = topic.partition_responses
            add(count(len(partitions)))
            for p in partitions:
                at = p.log_append_time
                add(_PART.pack(p.index, p.error_code.value, p.base_offset, _ms(at)))
                if start:
                    add(_I64.pack(p.log_start_offset))
                if errors:
                    add(count(len(p.record_errors)))
                    for e in p.record_errors:
                        add(_I32.pack(e.batch_index))
                        add(string(e.batch_index_error_message))
                        add(tags)
                    add(string(p.error_message))
                add(tags)
            add(tags)
        add(_I32.pack(round(answer.throttle_time.total_seconds() * 1000)))
        add(tags)
        return b"".join(parts)

    return write


def _field_type(cls: type[Any], *path: str) -> type[Any]:
    """The entity class a tuple field holds (`responses` -> TopicProduceResponse ...)."""
    for name in path:
        hints = typing.get_type_hints(cls)
        (cls,) = {a for a in typing.get_args(hints[name]) if a is not Ellipsis}
    return cls


def _ms(at: datetime.datetime | None) -> int:
    return -1 if at is None else round(at.timestamp() * 1000)


def _i32_count(n: int) -> bytes:
    return _I32.pack(n)


def _uvarint_count(n: int) -> bytes:
    return _SMALL[n + 1] if n < 127 else uvarint(n + 1)


def _legacy_string(value: str | None) -> bytes:
    if value is None:
        return _I16.pack(-1)
    data = value.encode()
    return _I16.pack(len(data)) + data


def _compact_string(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    data = value.encode()
    return _uvarint_count(len(data)) + data
