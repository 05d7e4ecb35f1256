"""Protobuf schemas in the registry: what kop accepts as one (base64 FileDescriptorProto,
built by protobuf's pool) and which evolutions it lets through (Confluent's rules)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf.descriptor_pb2 import (
    FieldDescriptorProto,
    FileDescriptorProto,
    FileDescriptorSet,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from kop.registry.errors import RegistryError
from kop.registry.protobuf.compat import why_cannot_read
from kop.registry.protobuf.descriptors import canonical_protobuf, file_of
from kop.registry.protobuf.native import native_data, schema_of_native
from kop.registry.schemas import PROTOBUF, parse
from kop.registry.strategies import check_schema

T = FieldDescriptorProto
OPTIONAL, REPEATED, REQUIRED = T.LABEL_OPTIONAL, T.LABEL_REPEATED, T.LABEL_REQUIRED


def proto(
    *messages: dict[str, Any],
    package: str = "shop",
    deps: tuple[str, ...] = (),
    syntax: str = "proto3",
) -> FileDescriptorProto:
    """A file of messages given as {"name": ..., "fields": [(name, number, type[, label
    [, type_name[, oneof]]])], "oneofs": [...], "nested": [...], "map_entry": bool}."""
    file = FileDescriptorProto(name="shop.proto", package=package, syntax=syntax)
    file.dependency.extend(deps)
    for m in messages:
        _message(file.message_type.add(), m, package)
    return file


def _message(out: Any, m: dict[str, Any], package: str) -> None:
    out.name = m["name"]
    for oneof in m.get("oneofs", []):
        out.oneof_decl.add(name=oneof)
    for name, number, kind, *rest in m.get("fields", []):
        label = rest[0] if rest else OPTIONAL
        field = out.field.add(name=name, number=number, type=kind, label=label)
        if len(rest) > 1 and rest[1]:
            field.type_name = rest[1] if rest[1].startswith(".") else f".{package}.{rest[1]}"
        if len(rest) > 2:
            field.oneof_index = m["oneofs"].index(rest[2])
    for nested in m.get("nested", []):
        _message(out.nested_type.add(), nested, package)
    if m.get("map_entry"):
        out.options.map_entry = True


def text(file: FileDescriptorProto) -> str:
    return base64.standard_b64encode(file.SerializeToString()).decode()


ORDER = {"name": "Order", "fields": [("id", 1, T.TYPE_INT64), ("note", 2, T.TYPE_STRING)]}


def with_fields(
    *fields: tuple[Any, ...], syntax: str = "proto3", **more: Any
) -> FileDescriptorProto:
    return proto({"name": "Order", "fields": list(fields), **more}, syntax=syntax)


def as_kept(file: FileDescriptorProto) -> FileDescriptorProto:
    """`file` as the registry keeps it: every schema's own file is `default.proto` (its
    name is how others import it, and a reference names it anew)."""
    kept = FileDescriptorProto()
    kept.CopyFrom(file)
    kept.name = "default.proto"
    return kept


# -- what is a Protobuf schema -------------------------------------------------------


async def test_a_descriptor_in_base64_is_a_schema_and_one_version_however_encoded() -> None:
    file = proto(ORDER)
    canonical = canonical_protobuf(text(file))
    assert file_of(canonical) == as_kept(file)
    spaced = "\n".join(text(file)[i : i + 10] for i in range(0, len(text(file)), 10))
    assert canonical_protobuf(spaced) == canonical
    assert (await parse(text(file), PROTOBUF)).text == canonical


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        ('syntax = "proto3";\nmessage A { strin a = 1; }', '2:13: "strin" is not defined'),
        ('syntax = "proto3"; import "other/team.proto"; message A {}', "other/team.proto"),
        ("not base64 at all!", "not a valid .proto schema: 1:1: Expected top-level"),
        (base64.b64encode(b"\xff\xff\xff").decode(), "not a FileDescriptorProto"),
        (text(with_fields(("c", 1, T.TYPE_MESSAGE, OPTIONAL, "Nowhere"))), "not a valid Protobuf"),
        (text(with_fields(("a", 1, T.TYPE_INT32), ("b", 1, T.TYPE_INT32))), "not a valid Protobuf"),
        (text(proto(ORDER, deps=("other/team.proto",))), "which no reference names"),
    ],
)
async def test_what_is_no_schema_kop_serves_is_refused_with_42201(sent: str, said: str) -> None:
    with pytest.raises(RegistryError) as refused:
        (await parse(sent, PROTOBUF))
    assert refused.value.code == 42201
    assert said in refused.value.message


def test_protobufs_well_known_types_may_be_imported() -> None:
    at = ("at", 3, T.TYPE_MESSAGE, OPTIONAL, ".google.protobuf.Timestamp")
    file = proto({"name": "Order", "fields": [at]}, deps=("google/protobuf/timestamp.proto",))
    assert file_of(canonical_protobuf(text(file))) == as_kept(file)


# -- which evolutions read ------------------------------------------------------------


COMPATIBLE = {
    "a field added": (
        with_fields(("id", 1, T.TYPE_INT64), ("n", 2, T.TYPE_STRING), ("x", 3, T.TYPE_BOOL)),
        proto(ORDER),
    ),
    "a field removed": (with_fields(("id", 1, T.TYPE_INT64)), proto(ORDER)),
    "a field renamed": (
        with_fields(("key", 1, T.TYPE_INT64), ("note", 2, T.TYPE_STRING)),
        proto(ORDER),
    ),
    "int64 read as int32 (one varint group)": (
        with_fields(("id", 1, T.TYPE_INT32), ("note", 2, T.TYPE_STRING)),
        proto(ORDER),
    ),
    "string read as bytes": (
        with_fields(("id", 1, T.TYPE_INT64), ("note", 2, T.TYPE_BYTES)),
        proto(ORDER),
    ),
    "a string made repeated": (
        with_fields(("id", 1, T.TYPE_INT64), ("note", 2, T.TYPE_STRING, REPEATED)),
        proto(ORDER),
    ),
    "the package renamed": (proto(ORDER, package="store"), proto(ORDER)),
    "a message added": (proto(ORDER, {"name": "Refund"}), proto(ORDER)),
    "a oneof around one field": (
        with_fields(
            ("id", 1, T.TYPE_INT64, OPTIONAL, "", "key"), ("note", 2, T.TYPE_STRING), oneofs=["key"]
        ),
        proto(ORDER),
    ),
    "a new field in a oneof": (
        with_fields(
            ("id", 1, T.TYPE_INT64, OPTIONAL, "", "k"),
            ("uuid", 3, T.TYPE_STRING, OPTIONAL, "", "k"),
            oneofs=["k"],
        ),
        with_fields(("id", 1, T.TYPE_INT64, OPTIONAL, "", "k"), oneofs=["k"]),
    ),
}

INCOMPATIBLE = {
    "int64 read as string": (
        with_fields(("id", 1, T.TYPE_STRING), ("note", 2, T.TYPE_STRING)),
        proto(ORDER),
        "Order.id (1): type changed from int64 to string",
    ),
    "int64 read as sint64 (zigzag)": (
        with_fields(("id", 1, T.TYPE_SINT64), ("note", 2, T.TYPE_STRING)),
        proto(ORDER),
        "type changed from int64 to sint64",
    ),
    "a number made repeated": (
        with_fields(("id", 1, T.TYPE_INT64, REPEATED), ("note", 2, T.TYPE_STRING)),
        proto(ORDER),
        "a number made repeated",
    ),
    "bytes read as a string (stricter than Confluent)": (
        with_fields(("id", 1, T.TYPE_INT64), ("note", 2, T.TYPE_STRING)),
        with_fields(("id", 1, T.TYPE_INT64), ("note", 2, T.TYPE_BYTES)),
        "bytes read as a string",
    ),
    "a message removed": (proto({"name": "Refund"}), proto(ORDER), "Order: message removed"),
    "a scalar made a message": (
        proto(
            {"name": "Order", "fields": [("id", 1, T.TYPE_MESSAGE, OPTIONAL, "Id")]}, {"name": "Id"}
        ),
        proto(ORDER, {"name": "Id"}),
        "kind changed from scalar to message",
    ),
    "a required field added": (
        with_fields(("id", 1, T.TYPE_INT64), ("must", 3, T.TYPE_INT32, REQUIRED)),
        with_fields(("id", 1, T.TYPE_INT64)),
        "required field added",
    ),
    "two fields moved into one oneof": (
        with_fields(
            ("id", 1, T.TYPE_INT64, OPTIONAL, "", "k"),
            ("note", 2, T.TYPE_STRING, OPTIONAL, "", "k"),
            oneofs=["k"],
        ),
        proto(ORDER),
        "k: the oneof takes fields the writer may set together (field 1, field 2)",
    ),
    "a field of a oneof taken out of it": (
        with_fields(
            ("id", 1, T.TYPE_INT64, OPTIONAL, "", "k"), ("uuid", 3, T.TYPE_STRING), oneofs=["k"]
        ),
        with_fields(
            ("id", 1, T.TYPE_INT64, OPTIONAL, "", "k"),
            ("uuid", 3, T.TYPE_STRING, OPTIONAL, "", "k"),
            oneofs=["k"],
        ),
        "k: field 3 removed from the oneof",
    ),
}


@pytest.mark.parametrize("case", COMPATIBLE, ids=list(COMPATIBLE))
def test_compatible_evolutions_read(case: str) -> None:
    reader, writer = COMPATIBLE[case]
    assert why_cannot_read(reader, writer) is None


@pytest.mark.parametrize("case", INCOMPATIBLE, ids=list(INCOMPATIBLE))
def test_incompatible_evolutions_are_refused_with_where_and_why(case: str) -> None:
    reader, writer, said = INCOMPATIBLE[case]
    why = why_cannot_read(reader, writer)
    assert why is not None and said in why, why


def _entry(value_type: int) -> dict[str, Any]:
    fields = [("key", 1, T.TYPE_STRING), ("value", 2, value_type)]
    return {"name": "TagsEntry", "fields": fields, "map_entry": True}


def _tags(value_type: int) -> FileDescriptorProto:
    field = ("tags", 4, T.TYPE_MESSAGE, REPEATED, "Order.TagsEntry")
    return proto({"name": "Order", "fields": [field], "nested": [_entry(value_type)]})


def test_a_maps_values_follow_the_scalar_rules() -> None:
    assert why_cannot_read(_tags(T.TYPE_UINT32), _tags(T.TYPE_INT64)) is None
    why = why_cannot_read(_tags(T.TYPE_DOUBLE), _tags(T.TYPE_INT64))
    assert why is not None and "map value" in why, why
    listed = with_fields(("tags", 4, T.TYPE_STRING, REPEATED))
    why = why_cannot_read(listed, _tags(T.TYPE_STRING))
    assert why is not None and "kind changed from map to scalar" in why


def test_a_message_that_holds_itself_is_compared_once() -> None:
    def tree(kind: int) -> FileDescriptorProto:
        fields = [("children", 1, T.TYPE_MESSAGE, REPEATED, "Node"), ("weight", 2, kind)]
        return proto({"name": "Node", "fields": fields})

    assert why_cannot_read(tree(T.TYPE_INT32), tree(T.TYPE_INT64)) is None
    assert "Node.weight (2)" in str(why_cannot_read(tree(T.TYPE_FLOAT), tree(T.TYPE_INT64)))


async def test_levels_check_both_directions_as_for_avro() -> None:
    old = await parse(text(proto(ORDER, syntax="proto2")), PROTOBUF)
    fields = [("id", 1, T.TYPE_INT64), ("note", 2, T.TYPE_STRING), ("x", 3, T.TYPE_BOOL, REQUIRED)]
    wider = await parse(text(with_fields(*fields, syntax="proto2")), PROTOBUF)
    assert "new schema cannot read" in str(check_schema("BACKWARD", wider, [old]))
    assert "required field added" in str(check_schema("BACKWARD", wider, [old]))
    # Confluent's rule: the old schema lacks a field the new one requires
    assert "required field removed" in str(check_schema("FORWARD", wider, [old]))
    renamed = await parse(text(proto(ORDER, package="x", syntax="proto2")), PROTOBUF)
    assert check_schema("FULL_TRANSITIVE", renamed, [old]) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.booleans())
def test_any_bytes_are_a_schema_or_refused_with_42201(data: bytes, mutate: bool) -> None:
    """Whatever a client encodes: parsed, or a RegistryError; never another exception.
    Half the inputs are a valid descriptor with bytes spliced in (deeper into the parser)."""
    if mutate:
        whole = _tags(T.TYPE_INT64).SerializeToString()
        data = whole[: len(data) % (len(whole) + 1)] + data
    try:
        canonical = canonical_protobuf(base64.b64encode(data).decode())
    except RegistryError as exc:
        assert exc.code == 42201
    else:
        assert why_cannot_read(file_of(canonical), file_of(canonical)) is None


# -- a topic's schema in Pulsar (PROTOBUF_NATIVE) ----------------------------------------


def test_a_topics_schema_is_pulsars_protobuf_native_with_the_first_message_as_root() -> None:
    api = ("api", 3, T.TYPE_MESSAGE, OPTIONAL, ".google.protobuf.Api")
    file = proto(
        {"name": "Order", "fields": [*ORDER["fields"], api]},
        {"name": "Refund"},
        deps=("google/protobuf/api.proto",),
    )
    canonical = canonical_protobuf(text(file))
    data = native_data(canonical)
    native = json.loads(data)
    assert (native["rootMessageTypeName"], native["rootFileDescriptorName"]) == (
        "shop.Order",
        "default.proto",
    )
    files = FileDescriptorSet.FromString(base64.b64decode(native["fileDescriptorSet"]))
    # every import, also the imports' own, each before its importers, then the file
    assert [f.name for f in files.file] == [
        "google/protobuf/source_context.proto",
        "google/protobuf/any.proto",
        "google/protobuf/type.proto",
        "google/protobuf/api.proto",
        "default.proto",
    ]
    assert native_data(canonical) == data  # the same bytes: Pulsar keeps its version
    assert schema_of_native(data) == canonical


def test_a_pulsar_version_is_shown_only_when_its_root_is_its_files_first_message() -> None:
    data = json.loads(native_data(canonical_protobuf(text(proto(ORDER, {"name": "Refund"})))))
    pretty = json.dumps(data, indent=2)  # as pulsar-client's ProtobufNativeSchema writes it
    assert schema_of_native(pretty) is not None
    assert schema_of_native(json.dumps({**data, "rootMessageTypeName": "shop.Refund"})) is None
    assert schema_of_native(json.dumps({**data, "rootFileDescriptorName": "x.proto"})) is None
    assert schema_of_native("not json") is None
    with pytest.raises(ValueError, match="needs a message"):
        native_data(canonical_protobuf(text(proto())))
