"""A FileDescriptorProto written back as `.proto` text: what Confluent's registry answers
for a Protobuf schema unless asked for `format=serialized`, and what Java's Protobuf
deserializers parse.

Written by hand because no library made for it exists in Python (protobuf's runtime
reads descriptors but does not print them). The rule it keeps: protoc compiles the text
back to the very descriptor it was printed from (tests/unit/test_registry_proto_text.py
checks it on the well-known types, `descriptor.proto` among them, and on a corpus of
proto2 and proto3 schemas). Type names are written fully qualified (`.pkg.Msg`), so no
scope rule of the reader is relied on; a map entry or a group is written where the
field that owns it is declared, so the nested types keep their order too.

Not written: options a schema defines for itself (`extend google.protobuf.FieldOptions`)
and then uses; the descriptor holds them as unknown bytes, which the serialized form
keeps and the text loses.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from google.protobuf import descriptor_pb2, text_encoding, text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

Field = descriptor_pb2.FieldDescriptorProto
Nested = descriptor_pb2.DescriptorProto

_SCALARS = {
    Field.TYPE_DOUBLE: "double", Field.TYPE_FLOAT: "float", Field.TYPE_INT64: "int64",
    Field.TYPE_UINT64: "uint64", Field.TYPE_INT32: "int32", Field.TYPE_FIXED64: "fixed64",
    Field.TYPE_FIXED32: "fixed32", Field.TYPE_BOOL: "bool", Field.TYPE_STRING: "string",
    Field.TYPE_BYTES: "bytes", Field.TYPE_UINT32: "uint32", Field.TYPE_SFIXED32: "sfixed32",
    Field.TYPE_SFIXED64: "sfixed64", Field.TYPE_SINT32: "sint32", Field.TYPE_SINT64: "sint64",
}  # fmt: skip
_LABELS = {Field.LABEL_OPTIONAL: "optional", Field.LABEL_REQUIRED: "required",
           Field.LABEL_REPEATED: "repeated"}  # fmt: skip
_INDENT = "  "


def proto_text(file: descriptor_pb2.FileDescriptorProto) -> str:
    return "\n".join(_Printer(file).lines()) + "\n"


class _Printer:
    def __init__(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self._file = file
        self._syntax = file.syntax or "proto2"

    def lines(self) -> Iterator[str]:
        file = self._file
        if self._syntax == "editions":
            edition = descriptor_pb2.Edition.Name(file.edition).removeprefix("EDITION_")
            yield f'edition = "{edition}";'
        else:
            yield f'syntax = "{self._syntax}";'
        if file.package:
            yield f"package {file.package};"
        for i, dependency in enumerate(file.dependency):
            kind = "public " if i in file.public_dependency else ""
            kind = "weak " if i in file.weak_dependency else kind
            yield f'import {kind}"{dependency}";'
        yield from _options(file.options, "")
        scope = f".{file.package}" if file.package else ""
        for message in file.message_type:
            yield from self._message(message, scope, "")
        for enum in file.enum_type:
            yield from _enum(enum, "", self._syntax == "editions")
        yield from self._extensions(file.extension, "")
        for service in file.service:
            yield from _service(service)

    def _message(self, message: Nested, scope: str, pad: str) -> Iterator[str]:
        yield f"{pad}message {message.name} {{"
        yield from self._body(message, f"{scope}.{message.name}", pad + _INDENT)
        yield f"{pad}}}"

    def _body(self, message: Nested, scope: str, pad: str) -> Iterator[str]:
        yield from _options(message.options, pad)
        owned = self._owned(message, scope)
        yield from self._members(message, owned, scope, pad)
        for enum in message.enum_type:
            yield from _enum(enum, pad, self._syntax == "editions")
        yield from self._extensions(message.extension, pad)
        for r in message.extension_range:
            yield f"{pad}extensions {_range(r.start, r.end - 1)}{_inline(r.options)};"
        names = [_quoted(n) if self._syntax != "editions" else n for n in message.reserved_name]
        yield from _reserved([(r.start, r.end - 1) for r in message.reserved_range], names, pad)

    def _members(
        self, message: Nested, owned: dict[str, str], scope: str, pad: str
    ) -> Iterator[str]:
        """Fields (oneofs as blocks) and nested types, merged so that both lists keep their
        order: a nested type a field owns is written with that field."""
        fields, nested = list(message.field), list(message.nested_type)
        owned_types = set(owned.values())
        written_fields: set[str] = set()
        written_types: set[str] = set()
        f = n = 0
        while True:
            while n < len(nested) and nested[n].name in written_types:
                n += 1
            while f < len(fields) and fields[f].name in written_fields:
                f += 1
            if f >= len(fields):
                if n >= len(nested):
                    return
                written_types.add(nested[n].name)
                yield from self._message(nested[n], scope, pad)
                continue
            field = fields[f]
            oneof = field.HasField("oneof_index") and not field.proto3_optional
            members = [x for x in fields if _in_oneof(x, field.oneof_index)] if oneof else [field]
            needs = [owned[m.name] for m in members if m.name in owned]
            head = nested[n].name if n < len(nested) else None
            if needs and head is not None and head != needs[0] and head not in owned_types:
                written_types.add(head)  # declared before the type this field owns
                yield from self._message(nested[n], scope, pad)
                continue
            if oneof:
                yield from self._oneof(message, field.oneof_index, members, owned, scope, pad)
            else:
                yield from self._field(field, owned, message, scope, pad)
            written_fields.update(m.name for m in members)
            written_types.update(needs)

    def _owned(self, message: Nested, scope: str) -> dict[str, str]:
        """Fields that own a nested type (a map's entry, a group's type): name -> type."""
        by_name = {n.name: n for n in message.nested_type}
        out: dict[str, str] = {}
        for field in message.field:
            short = field.type_name.rsplit(".", 1)[-1]
            inner = by_name.get(short)
            if inner is None or field.type_name != f"{scope}.{short}":
                continue
            is_map = inner.options.map_entry and field.type == Field.TYPE_MESSAGE
            is_group = field.type == Field.TYPE_GROUP and self._syntax != "editions"
            if is_map or is_group:
                out[field.name] = short
        return out

    def _oneof(
        self, message: Nested, index: int, members: list[Field], owned: dict[str, str],
        scope: str, pad: str,
    ) -> Iterator[str]:  # fmt: skip
        decl = message.oneof_decl[index]
        yield f"{pad}oneof {decl.name} {{"
        yield from _options(decl.options, pad + _INDENT)
        for field in members:
            yield from self._field(field, owned, message, scope, pad + _INDENT, in_oneof=True)
        yield f"{pad}}}"

    def _field(
        self, field: Field, owned: dict[str, str], message: Nested, scope: str, pad: str,
        in_oneof: bool = False,
    ) -> Iterator[str]:  # fmt: skip
        label = "" if in_oneof else self._label(field)
        inner = owned.get(field.name)
        if inner is not None:
            entry = next(n for n in message.nested_type if n.name == inner)
            if entry.options.map_entry:
                key, value = entry.field[0], entry.field[1]
                kind = f"map<{_type(key)}, {_type(value)}>"
                yield f"{pad}{kind} {field.name} = {field.number}{_field_options(field)};"
                return
            yield f"{pad}{label}group {inner} = {field.number}{_field_options(field)} {{"
            yield from self._body(entry, f"{scope}.{inner}", pad + _INDENT)
            yield f"{pad}}}"
            return
        yield f"{pad}{label}{_type(field)} {field.name} = {field.number}{_field_options(field)};"

    def _label(self, field: Field) -> str:
        if field.label == Field.LABEL_REPEATED:
            return "repeated "
        if self._syntax == "proto2":
            return _LABELS[field.label] + " "
        return "optional " if field.proto3_optional else ""

    def _extensions(self, extensions: Sequence[Field], pad: str) -> Iterator[str]:
        """`extend` blocks, one per run of extensions of one extendee (order kept)."""
        i = 0
        while i < len(extensions):
            extendee = extensions[i].extendee
            yield f"{pad}extend {extendee} {{"
            while i < len(extensions) and extensions[i].extendee == extendee:
                field = extensions[i]
                declared = f"{_type(field)} {field.name} = {field.number}{_field_options(field)}"
                yield f"{pad}{_INDENT}{self._label(field)}{declared};"
                i += 1
            yield f"{pad}}}"


def _in_oneof(field: Field, index: int) -> bool:
    return (
        field.HasField("oneof_index") and field.oneof_index == index and not field.proto3_optional
    )


def _type(field: Field) -> str:
    if field.type in (Field.TYPE_MESSAGE, Field.TYPE_ENUM, Field.TYPE_GROUP):
        return field.type_name
    return _SCALARS[field.type]


def _field_options(field: Field) -> str:
    parts: list[str] = []
    if field.HasField("default_value"):
        parts.append(f"default = {_default(field)}")
    if field.HasField("json_name"):
        parts.append(f"json_name = {_quoted(field.json_name)}")
    parts.extend(f"{name} = {value}" for name, value in _option_values(field.options))
    return f" [{', '.join(parts)}]" if parts else ""


def _default(field: Field) -> str:
    value = field.default_value
    if field.type == Field.TYPE_STRING:
        return _quoted(value)
    if field.type == Field.TYPE_BYTES:
        return f'"{value}"'  # protoc keeps a bytes default C-escaped already
    return value  # numbers (inf, nan), true/false and enum value names as protoc wrote them


def _inline(options: Message) -> str:
    parts = [f"{name} = {value}" for name, value in _option_values(options)]
    return f" [{', '.join(parts)}]" if parts else ""


def _options(options: Message, pad: str) -> Iterator[str]:
    for name, value in _option_values(options):
        yield f"{pad}option {name} = {value};"


def _option_values(options: Message) -> Iterator[tuple[str, str]]:
    for field, value in options.ListFields():
        if field.name == "map_entry" and not field.is_extension:
            continue  # written as map<...>
        name = f"({field.full_name})" if field.is_extension else field.name
        values = value if field.is_repeated else [value]
        for one in values:
            yield name, _value(field, one)


def _value(field: FieldDescriptor, value: Any) -> str:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return "{ " + text_format.MessageToString(value, as_one_line=True) + " }"
    if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
        return str(field.enum_type.values_by_number[value].name)
    if field.type == FieldDescriptor.TYPE_STRING:
        return _quoted(value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return f'"{text_encoding.CEscape(value, as_utf8=False)}"'
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    return repr(value)


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _quoted(value: str) -> str:
    """A string literal protoc reads back as `value` (UTF-8 kept as it is)."""
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _enum(enum: descriptor_pb2.EnumDescriptorProto, pad: str, editions: bool) -> Iterator[str]:
    yield f"{pad}enum {enum.name} {{"
    inner = pad + _INDENT
    yield from _options(enum.options, inner)
    for value in enum.value:
        yield f"{inner}{value.name} = {value.number}{_inline(value.options)};"
    names = [n if editions else _quoted(n) for n in enum.reserved_name]
    yield from _reserved([(r.start, r.end) for r in enum.reserved_range], names, inner)
    yield f"{pad}}}"


def _reserved(ranges: list[tuple[int, int]], names: Sequence[str], pad: str) -> Iterator[str]:
    if ranges:
        yield f"{pad}reserved {', '.join(_range(a, b) for a, b in ranges)};"
    if names:
        yield f"{pad}reserved {', '.join(names)};"


def _range(first: int, last: int) -> str:
    return str(first) if first == last else f"{first} to {last}"


def _service(service: descriptor_pb2.ServiceDescriptorProto) -> Iterator[str]:
    yield f"service {service.name} {{"
    yield from _options(service.options, _INDENT)
    for method in service.method:
        ins = f"stream {method.input_type}" if method.client_streaming else method.input_type
        outs = f"stream {method.output_type}" if method.server_streaming else method.output_type
        head = f"{_INDENT}rpc {method.name} ({ins}) returns ({outs})"
        opts = list(_options(method.options, _INDENT * 2))
        if opts:
            yield head + " {"
            yield from opts
            yield f"{_INDENT}}}"
        else:
            yield head + ";"
    yield "}"
