"""A Protobuf schema as the registry reads it: a FileDescriptorProto, built by protobuf's
own descriptor pool so that what it refuses (an unknown type, a name twice, a bad
number) is refused with 42201 before any compatibility is checked.

Why base64 descriptors first: confluent-kafka's serializers register a schema as the
base64 of its compiled FileDescriptorProto and read it back with `format=serialized`;
parsing `.proto` text needs a compiler (protoc), which kop does not carry yet. A file
may import Protobuf's own well-known types (google/protobuf/*.proto, as protobuf's
runtime holds them); other imports are schema references, not served yet.
"""

from __future__ import annotations

import base64
import binascii

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
    return base64.standard_b64encode(_checked(text).SerializeToString(deterministic=True)).decode()


def file_of(text: str) -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto of a canonical schema (canonical_protobuf's)."""
    return descriptor_pb2.FileDescriptorProto.FromString(base64.standard_b64decode(text))


def _checked(text: str) -> descriptor_pb2.FileDescriptorProto:
    try:
        data = base64.b64decode("".join(text.split()).encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        if "{" in text or ";" in text:
            raise invalid_schema(
                "kop reads a Protobuf schema as the base64 of its FileDescriptorProto (what "
                "confluent-kafka's serializers send); .proto text is not parsed yet"
            ) from None
        raise invalid_schema("not base64") from None
    try:
        file = descriptor_pb2.FileDescriptorProto.FromString(data)
    except DecodeError as exc:
        raise invalid_schema(f"not a FileDescriptorProto: {exc}") from None
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
