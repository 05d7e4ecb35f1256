"""A Protobuf schema as the registry reads it: a FileDescriptorProto, built by protobuf's
own descriptor pool so that what it refuses (an unknown type, a name twice, a bad
number) is refused with 42201 before any compatibility is checked.

A schema comes either as the base64 of its compiled FileDescriptorProto (what
confluent-kafka's serializers send, reading it back with `format=serialized`) or as
`.proto` text (what Java's serializers and people send), compiled by protoc in a worker
process (kop.registry.protobuf.compiler). Either way the registry keeps the base64 of
the descriptor, and writes text back when asked (kop.registry.protobuf.text). A file
may import Protobuf's own well-known types (google/protobuf/*.proto, as protobuf's
runtime holds them); other imports are schema references, not served yet.
"""

from __future__ import annotations

import base64
import binascii
from typing import overload

from google.protobuf import (
    any_pb2,
    api_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    source_context_pb2,
    struct_pb2,
    timestamp_pb2,
    type_pb2,
    wrappers_pb2,
)
from google.protobuf.message import DecodeError

from kop.registry.errors import invalid_schema
from kop.registry.protobuf.compiler import COMPILER

# The well-known types a schema may import: their modules register them in protobuf's
# default pool.
WELL_KNOWN = {
    module.DESCRIPTOR.name: module.DESCRIPTOR
    for module in (
        any_pb2, api_pb2, descriptor_pb2, duration_pb2, empty_pb2, field_mask_pb2,
        source_context_pb2, struct_pb2, timestamp_pb2, type_pb2, wrappers_pb2,
    )
}  # fmt: skip


def canonical_protobuf(text: str) -> str:
    """The base64 of the schema's FileDescriptorProto serialized deterministically (the
    same schema sent twice is one version); RegistryError 42201 if it is none."""
    return _canonical(_checked(_decoded(text)))


async def canonical_protobuf_any(text: str) -> str:
    """canonical_protobuf's, for a schema given as base64 or as `.proto` text."""
    file = _decoded(text, strict=False)
    if file is None:
        file = await COMPILER.compile(text)
    return _canonical(_checked(file))


def _canonical(file: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.standard_b64encode(file.SerializeToString(deterministic=True)).decode()


def file_of(text: str) -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto of a canonical schema (canonical_protobuf's)."""
    return descriptor_pb2.FileDescriptorProto.FromString(base64.standard_b64decode(text))


@overload
def _decoded(text: str) -> descriptor_pb2.FileDescriptorProto: ...
@overload
def _decoded(text: str, strict: bool) -> descriptor_pb2.FileDescriptorProto | None: ...
def _decoded(text: str, strict: bool = True) -> descriptor_pb2.FileDescriptorProto | None:
    """The descriptor a base64 schema holds; None (not `strict`) when the text is not
    base64, which `.proto` text never is (it holds `;`)."""
    try:
        data = base64.b64decode("".join(text.split()).encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        if not strict:
            return None
        raise invalid_schema("not base64") from None
    try:
        return descriptor_pb2.FileDescriptorProto.FromString(data)
    except DecodeError as exc:
        raise invalid_schema(f"not a FileDescriptorProto: {exc}") from None


def _checked(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    if not file.name:
        file.name = "default.proto"  # as Confluent's clients name a schema of no file
    pool = descriptor_pool.DescriptorPool()
    for dependency in file.dependency:
        if dependency not in WELL_KNOWN:
            raise invalid_schema(
                f"the schema imports {dependency!r}: schema references are not served by kop "
                "yet (Protobuf's well-known types are)"
            )
    for imported in imports_of(file):
        pool.Add(imported)
    try:
        pool.Add(file)
        pool.FindFileByName(file.name)
    except (TypeError, KeyError, ValueError, RuntimeError) as exc:
        raise invalid_schema(f"not a valid Protobuf schema: {exc}") from None
    return file


def imports_of(
    file: descriptor_pb2.FileDescriptorProto,
) -> list[descriptor_pb2.FileDescriptorProto]:
    """The well-known files `file` imports, also through one another, each before the
    files that import it (as a descriptor pool and Pulsar's PROTOBUF_NATIVE need them)."""
    out: list[descriptor_pb2.FileDescriptorProto] = []
    done: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        done.add(name)
        known = WELL_KNOWN[name]
        for dependency in known.dependencies:
            visit(dependency.name)
        proto = descriptor_pb2.FileDescriptorProto()
        known.CopyToProto(proto)
        out.append(proto)

    for name in file.dependency:
        visit(name)
    return out
