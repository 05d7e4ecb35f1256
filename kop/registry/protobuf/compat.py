"""Whether a Protobuf schema reads what another one wrote: the compatibility check of
PROTOBUF subjects, with Confluent's rules (BACKWARD asks why_cannot_read(reader=new,
writer=old), FORWARD the other way round).

Why these rules: the Protobuf wire format names fields by number, not by name, so a
reader reads a writer's data when every field number both know is read as the same
kind of value. What Confluent's registry refuses, kop refuses, in its words:
- a message of the writer's that the reader lacks (matched by its name inside the
  package: a package renamed changes no byte on the wire, and Confluent accepts it);
- a field whose kind changes between a scalar (or an enum), a message and a map;
- a scalar whose wire group changes: {int32, int64, uint32, uint64, bool, enums},
  {sint32, sint64}, {string, bytes}, {fixed32, sfixed32}, {fixed64, sfixed64}, float,
  double each read only their own group;
- a number made repeated or singular (packed on the wire), where strings and bytes
  may change so;
- a field of another message type (by its name inside the package);
- a required field (proto2) added or removed;
- a field of a writer's oneof that is no longer in the reader's oneof of that name, and
  a reader's oneof that takes fields the writer could set together (two fields, or a
  field and another oneof's).
Everything else (fields and enum values added or removed, names changed, oneofs added
or removed, messages added or moved) is compatible, but for one change Confluent lets
through and kop does not: bytes read as a string (proto3's parsers refuse a string that
is not UTF-8, so the reader fails on data the writer was free to write). A string read
as bytes is fine.

The descriptors come from kop.registry.protobuf.descriptors, so they are well formed.
Each writer message is compared once with the reader's of its name, so the work is
linear in the schemas' size: a message that refers to itself needs no memo.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf.descriptor_pb2 import (
    DescriptorProto,
    FieldDescriptorProto,
    FileDescriptorProto,
)

_T = FieldDescriptorProto
_GROUPS = {
    **dict.fromkeys((_T.TYPE_INT32, _T.TYPE_INT64, _T.TYPE_UINT32, _T.TYPE_UINT64), "varint"),
    **dict.fromkeys((_T.TYPE_BOOL, _T.TYPE_ENUM), "varint"),
    **dict.fromkeys((_T.TYPE_SINT32, _T.TYPE_SINT64), "zigzag varint"),
    **dict.fromkeys((_T.TYPE_STRING, _T.TYPE_BYTES), "string or bytes"),
    **dict.fromkeys((_T.TYPE_FIXED32, _T.TYPE_SFIXED32), "fixed32"),
    **dict.fromkeys((_T.TYPE_FIXED64, _T.TYPE_SFIXED64), "fixed64"),
    _T.TYPE_FLOAT: "float",
    _T.TYPE_DOUBLE: "double",
}
_COMPOSITE = (_T.TYPE_MESSAGE, _T.TYPE_GROUP)


@dataclass(frozen=True, slots=True)
class _File:
    """One schema's messages by their name inside its package ("Outer.Inner")."""

    package: str
    messages: dict[str, DescriptorProto]

    @classmethod
    def of(cls, file: FileDescriptorProto) -> _File:
        messages: dict[str, DescriptorProto] = {}
        todo = [("", m) for m in file.message_type]
        while todo:
            outer, message = todo.pop()
            name = f"{outer}{message.name}"
            messages[name] = message
            todo.extend((f"{name}.", nested) for nested in message.nested_type)
        return cls(file.package, messages)

    def local(self, type_name: str) -> str:
        """A field's type by its name inside the package (as written when it is from
        another file)."""
        name = type_name.removeprefix(".")
        if self.package and name.startswith(self.package + "."):
            return name[len(self.package) + 1 :]
        return name

    def kind(self, field: FieldDescriptorProto) -> str:
        if field.type not in _COMPOSITE:
            return "scalar"
        entry = self.messages.get(self.local(field.type_name))
        repeated = field.label == _T.LABEL_REPEATED
        return "map" if repeated and entry is not None and entry.options.map_entry else "message"


def why_cannot_read(reader: FileDescriptorProto, writer: FileDescriptorProto) -> str | None:
    """None when data written with `writer` is read by `reader`; else one line naming
    the message and field where it fails."""
    mine, theirs = _File.of(reader), _File.of(writer)
    for name, written in sorted(theirs.messages.items()):
        read = mine.messages.get(name)
        if read is None:
            return f"{name}: message removed"
        for why in _message(mine, read, theirs, written):
            return f"{name}.{why}"
    return None


def _message(
    mine: _File, read: DescriptorProto, theirs: _File, written: DescriptorProto
) -> Iterator[str]:
    """Why the reader's message cannot read the writer's (each reason; the first is
    reported)."""
    readers = {f.number: f for f in read.field}
    writers = {f.number: f for f in written.field}
    yield from _oneofs(read, written)
    for number, w in sorted(writers.items()):
        r = readers.get(number)
        if r is None:
            if w.label == _T.LABEL_REQUIRED:
                yield f"{w.name} ({number}): required field removed"
        else:
            yield from _field(mine, r, theirs, w)
    for number, r in sorted(readers.items()):
        if number not in writers and r.label == _T.LABEL_REQUIRED:
            yield f"{r.name} ({number}): required field added"


def _field(
    mine: _File, r: FieldDescriptorProto, theirs: _File, w: FieldDescriptorProto
) -> Iterator[str]:
    where = f"{r.name} ({r.number})"
    kinds = theirs.kind(w), mine.kind(r)
    if kinds[0] != kinds[1]:
        yield f"{where}: kind changed from {kinds[0]} to {kinds[1]}"
    elif kinds[0] == "scalar":
        before, after = _GROUPS.get(w.type), _GROUPS.get(r.type)
        if before != after:
            yield f"{where}: type changed from {_name(w)} to {_name(r)}"
        elif w.type == _T.TYPE_BYTES and r.type == _T.TYPE_STRING:
            yield f"{where}: bytes read as a string (a reader refuses bytes that are not UTF-8)"
        elif _repeated(w) != _repeated(r) and before != "string or bytes":
            yield f"{where}: a number made {'repeated' if _repeated(r) else 'singular'}"
    elif kinds[0] == "message" and theirs.local(w.type_name) != mine.local(r.type_name):
        yield f"{where}: message type changed from {_name(w)} to {_name(r)}"
    elif kinds[0] == "map":
        entries = theirs.messages[theirs.local(w.type_name)], mine.messages[mine.local(r.type_name)]
        for number in (1, 2):  # a map entry's key and value
            entry_w = next((f for f in entries[0].field if f.number == number), None)
            entry_r = next((f for f in entries[1].field if f.number == number), None)
            if entry_w is not None and entry_r is not None:
                for why in _field(mine, entry_r, theirs, entry_w):
                    yield f"{where}: map {'key' if number == 1 else 'value'} {why}"
    if (w.label == _T.LABEL_REQUIRED) != (r.label == _T.LABEL_REQUIRED):
        yield f"{where}: " + (
            "made required" if r.label == _T.LABEL_REQUIRED else "no longer required"
        )


def _oneofs(read: DescriptorProto, written: DescriptorProto) -> Iterator[str]:
    """A writer's oneof member must stay in the reader's oneof of that name; a reader's
    oneof may not take fields the writer could set together."""
    in_read, in_written = _oneof_members(read), _oneof_members(written)
    writer_fields = {f.number for f in written.field}
    for name, numbers in sorted(in_written.items()):
        kept = in_read.get(name)
        if kept is not None:
            for number in sorted(numbers - kept):
                yield f"{name}: field {number} removed from the oneof"
    written_in = {n: name for name, numbers in in_written.items() for n in numbers}
    for name, numbers in sorted(in_read.items()):
        origins = {written_in.get(n, f"field {n}") for n in numbers if n in writer_fields}
        if len(origins) > 1:
            together = ", ".join(sorted(origins))
            yield f"{name}: the oneof takes fields the writer may set together ({together})"


def _oneof_members(message: DescriptorProto) -> dict[str, set[int]]:
    """Each real oneof's field numbers (proto3's `optional` makes a synthetic oneof of
    one field, which is no choice)."""
    out: dict[str, set[int]] = {}
    for field in message.field:
        real = field.HasField("oneof_index") and not field.proto3_optional
        if real and 0 <= field.oneof_index < len(message.oneof_decl):
            out.setdefault(message.oneof_decl[field.oneof_index].name, set()).add(field.number)
    return out


def _repeated(field: FieldDescriptorProto) -> bool:
    return field.label == _T.LABEL_REPEATED


def _name(field: FieldDescriptorProto) -> str:
    if field.type in _COMPOSITE or field.type == _T.TYPE_ENUM:
        return field.type_name.removeprefix(".")
    return _T.Type.Name(field.type).removeprefix("TYPE_").lower()
