"""Every length in a request frame, checked against the bytes that follow it.

kio's native reader sizes its arrays from the count read off the wire before it
reads a single element (`Vec::with_capacity(n)`); Rust aborts the process when
that allocation fails, and Python cannot catch an abort. So no frame reaches kio
before this pass has walked it the way kio will read it: every array, string,
bytes and tagged field must fit in the bytes that remain, varints are at most
five bytes, and the elements of all arrays together stay within a budget, which
bounds both the objects kio builds and the time this pass and kio spend on one
frame.

The walk is compiled once per entity class from kio's own schema metadata (the
same `kafka_type`, tag and flexible-version facts kio's reader is built from).
Runs of fixed-size fields collapse into one skip, and arrays of fixed-size
elements are checked in O(1). It reads lengths only; values are kio's business.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

Buffer = bytes | bytearray | memoryview

# Array elements of all arrays in one request, together. A Fetch of 10,000
# partitions spends about 10,100 of them, a Metadata for 50,000 topics 50,000.
# The most a frame within it costs kop's event loop is measured in
# docs/decisions.md (D7).
DEFAULT_MAX_ELEMENTS = 100_000

_FIXED: dict[str, int] = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_VARINT_MAX_BYTES = 5  # Kafka's readUnsignedVarint refuses a sixth byte
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I8 = struct.Struct(">b")


class FrameShapeError(ValueError):
    """A length or count in the frame does not fit the bytes that follow it."""


class Budget:
    """What one frame may still spend: array elements (see DEFAULT_MAX_ELEMENTS).

    `lengths`, when a list, collects where each length or count sits and its wire
    form ("i16", "i32", "uvarint"): the fuzzer's map of what to mutate."""

    __slots__ = ("elements", "lengths")

    def __init__(self, elements: int, lengths: list[tuple[int, str]] | None = None) -> None:
        self.elements = elements
        self.lengths = lengths

    def spend(self, n: int, where: str) -> None:
        self.elements -= n
        if self.elements < 0:
            raise FrameShapeError(f"{where}: too many array elements in one request")


# A compiled walk: (frame, position, budget) -> position after the value.
Walk = Callable[[Buffer, int, Budget], int]


def check_request(
    header_cls: type,
    body_cls: type,
    frame: Buffer,
    budget: Budget | None = None,
) -> int:
    """Raise FrameShapeError unless kio can read header and body of `frame` without
    sizing anything from a length the frame cannot back; returns where the body ends.
    Bytes after the body are allowed (Kafka ignores them)."""
    budget = budget or Budget(DEFAULT_MAX_ELEMENTS)
    try:
        pos = _walk_entity(header_cls)(frame, 0, budget)
        return _walk_entity(body_cls)(frame, pos, budget)
    except struct.error as exc:  # a fixed-size read past the end
        raise FrameShapeError(f"frame ends inside a field: {exc}") from None


def _remaining(frame: Buffer, pos: int, need: int, where: str) -> None:
    if need > len(frame) - pos:
        raise FrameShapeError(
            f"{where}: {need} bytes announced at byte {pos}, {max(len(frame) - pos, 0)} follow"
        )


def _note(budget: Budget, pos: int, form: str) -> None:
    if budget.lengths is not None:
        budget.lengths.append((pos, form))


def _uvarint(frame: Buffer, pos: int, where: str) -> tuple[int, int]:
    value = 0
    for i in range(_VARINT_MAX_BYTES):
        if pos + i >= len(frame):
            raise FrameShapeError(f"{where}: frame ends inside a varint at byte {pos}")
        byte = frame[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return value, pos + i + 1
    raise FrameShapeError(f"{where}: varint longer than {_VARINT_MAX_BYTES} bytes at byte {pos}")


# -- strings and bytes -------------------------------------------------------------------


def _legacy_sized(length: struct.Struct, form: str, nullable: bool, where: str) -> Walk:
    """Legacy strings (an int16 length) and bytes (an int32 length), -1 for null."""
    width = length.size

    def walk(frame: Buffer, pos: int, budget: Budget) -> int:
        n: int = length.unpack_from(frame, pos)[0]
        _note(budget, pos, form)
        pos += width
        if n < 0:
            if n == -1 and nullable:
                return pos
            raise FrameShapeError(f"{where}: length {n} at byte {pos - width}")
        _remaining(frame, pos, n, where)
        return pos + n

    return walk


def _compact_bytes(nullable: bool, where: str) -> Walk:
    """Compact strings and bytes: a varint of length + 1, 0 for null."""

    def walk(frame: Buffer, pos: int, budget: Budget) -> int:
        _note(budget, pos, "uvarint")
        n, pos = _uvarint(frame, pos, where)
        if n == 0:
            if nullable:
                return pos
            raise FrameShapeError(f"{where}: null where a value is required")
        _remaining(frame, pos, n - 1, where)
        return pos + n - 1

    return walk


# -- arrays ------------------------------------------------------------------------------


def _array(compact: bool, element: Walk | int, min_size: int, nullable: bool, where: str) -> Walk:
    """An array of `element`: a walk, or the size of a fixed-size element. Null only
    where the schema allows it, as Kafka's own readers: kio would hand a handler None
    where it iterates."""
    smallest = max(min_size, 1)

    def null(pos: int) -> int:
        if not nullable:
            raise FrameShapeError(f"{where}: null array where the schema has none")
        return pos

    def walk(frame: Buffer, pos: int, budget: Budget) -> int:
        _note(budget, pos, "uvarint" if compact else "i32")
        if compact:
            n, pos = _uvarint(frame, pos, where)
            if n == 0:
                return null(pos)
            n -= 1
        else:
            (n,) = _I32.unpack_from(frame, pos)
            pos += 4
            if n < 0:
                if n == -1:
                    return null(pos)
                raise FrameShapeError(f"{where}: array length {n} at byte {pos - 4}")
        if n > (len(frame) - pos) // smallest:
            raise FrameShapeError(
                f"{where}: array of {n} elements at byte {pos}, only "
                f"{max(len(frame) - pos, 0)} bytes follow"
            )
        budget.spend(n, where)
        if isinstance(element, int):
            return pos + n * element
        for _ in range(n):
            pos = element(frame, pos, budget)
        return pos

    return walk


# -- entities ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Compiled:
    walk: Walk | int  # int: every value of the entity has this size
    min_size: int


@cache
def _walk_entity(cls: type) -> Walk:
    compiled = _compile_entity(cls, False)
    if isinstance(compiled.walk, int):
        size = compiled.walk

        def fixed(frame: Buffer, pos: int, budget: Budget) -> int:
            _remaining(frame, pos, size, cls.__name__)
            return pos + size

        return fixed
    return compiled.walk


@cache
def _compile_entity(cls: type, nullable: bool) -> _Compiled:
    flexible = bool(getattr(cls, "__flexible__"))  # noqa: B009 - kio's class attribute
    header = cls.__name__ == "RequestHeader"
    steps: list[Walk | int] = []
    tagged: dict[int, Walk] = {}
    min_size = 0
    for field in dataclasses.fields(cls):
        tag = get_field_tag(field)
        where = f"{cls.__name__}.{field.name}"
        # kio reads tagged fields as never null, and a request header's client_id
        # always as a nullable legacy string (Kafka's own exception).
        part = _compile_field(
            field, flexible and not (header and field.name == "client_id"), tag is None, where
        )
        if tag is not None:
            tagged[int(tag)] = _as_walk(part.walk, where)
            continue
        min_size += part.min_size
        if isinstance(part.walk, int) and steps and isinstance(steps[-1], int):
            steps[-1] += part.walk
        else:
            steps.append(part.walk)
    if flexible:
        tags = _tagged_fields(tagged, cls.__name__)
        min_size += 1
        if not nullable and len(steps) == 1 and isinstance(steps[0], int):
            # Fixed fields, then tags (a Fetch partition): one call per element.
            return _Compiled(_fixed_then_tags(steps[0], tags), min_size)
        steps.append(tags)
    if not nullable and len(steps) == 1 and isinstance(steps[0], int):
        return _Compiled(steps[0], min_size)
    if not steps:
        return _Compiled(0, 0) if not nullable else _Compiled(_nullable(_noop, cls.__name__), 1)
    body = _sequence(steps)
    if nullable:
        return _Compiled(_nullable(body, cls.__name__), 1)
    return _Compiled(body, min_size)


def _compile_field(
    field: dataclasses.Field[Any], flexible: bool, may_null: bool, where: str
) -> _Compiled:
    optional = may_null and is_optional(field)
    kind = classify_field(field)
    if isinstance(kind, PrimitiveField):
        return _primitive(get_schema_field_type(field), flexible, optional, where)
    if isinstance(kind, EntityField):
        return _compile_entity(kind.type_, optional)
    if isinstance(kind, PrimitiveTupleField):
        element = _primitive(get_schema_field_type(field), flexible, False, where)
    else:
        assert isinstance(kind, EntityTupleField)
        element = _compile_entity(kind.type_, False)
    walk = _array(flexible, element.walk, element.min_size, optional, where)
    return _Compiled(walk, 1 if flexible else 4)


def _primitive(kafka_type: str, flexible: bool, optional: bool, where: str) -> _Compiled:
    size = _FIXED.get(kafka_type)
    if size is not None:
        return _Compiled(size, size)
    if kafka_type in ("string", "bytes", "records"):
        if flexible:
            return _Compiled(_compact_bytes(optional, where), 1)
        if kafka_type == "string":
            return _Compiled(_legacy_sized(_I16, "i16", optional, where), 2)
        return _Compiled(_legacy_sized(_I32, "i32", optional, where), 4)
    raise NotImplementedError(f"{where}: no bounds check for kafka type {kafka_type!r}")


def _as_walk(step: Walk | int, where: str) -> Walk:
    if not isinstance(step, int):
        return step
    size = step

    def fixed(frame: Buffer, pos: int, budget: Budget) -> int:
        _remaining(frame, pos, size, where)
        return pos + size

    return fixed


def _noop(frame: Buffer, pos: int, budget: Budget) -> int:
    return pos


def _sequence(steps: list[Walk | int]) -> Walk:
    plan = tuple(steps)

    def walk(frame: Buffer, pos: int, budget: Budget) -> int:
        for step in plan:
            if isinstance(step, int):
                pos += step
            else:
                pos = step(frame, pos, budget)
        if pos > len(frame):
            raise FrameShapeError(f"frame ends {pos - len(frame)} bytes early")
        return pos

    return walk


def _fixed_then_tags(size: int, tags: Walk) -> Walk:
    def walk(frame: Buffer, pos: int, budget: Budget) -> int:
        pos += size
        if pos < len(frame) and frame[pos] == 0 and budget.lengths is None:  # the usual case
            return pos + 1
        return tags(frame, pos, budget)

    return walk


def _nullable(body: Walk, where: str) -> Walk:
    """KIP-893 nullable structs: an int8 marker, -1 for null."""

    def walk(frame: Buffer, pos: int, budget: Budget) -> int:
        (marker,) = _I8.unpack_from(frame, pos)
        if marker == -1:
            return pos + 1
        return body(frame, pos + 1, budget)

    return walk


def _tagged_fields(known: dict[int, Walk], where: str) -> Walk:
    """A tagged-field section as kio reads it: each value is read by its schema, so
    the size a field announces must be exactly what its value takes; kio refuses
    tags it does not know."""

    def walk(frame: Buffer, pos: int, budget: Budget) -> int:
        _note(budget, pos, "uvarint")
        count, pos = _uvarint(frame, pos, where)
        if count > (len(frame) - pos) // 2:
            raise FrameShapeError(f"{where}: {count} tagged fields announced at byte {pos}")
        budget.spend(count, where)
        for _ in range(count):
            tag, pos = _uvarint(frame, pos, where)
            _note(budget, pos, "uvarint")
            size, pos = _uvarint(frame, pos, where)
            _remaining(frame, pos, size, f"{where} tag {tag}")
            field = known.get(tag)
            if field is None:
                raise FrameShapeError(f"{where}: unknown tagged field {tag}")
            end = field(frame, pos, budget)
            if end != pos + size:
                raise FrameShapeError(
                    f"{where} tag {tag}: announces {size} bytes, its value takes {end - pos}"
                )
            pos = end
        return pos

    return walk


__all__ = ["DEFAULT_MAX_ELEMENTS", "Budget", "FrameShapeError", "check_request"]
