"""A Protobuf schema as the registry reads it: a FileDescriptorProto, built by protobuf's
own descriptor pool so that what it refuses (an unknown type, a name twice, a bad
number) is refused with 42201 before any compatibility is checked.

A schema comes either as the base64 of its compiled FileDescriptorProto (what
confluent-kafka's serializers send, reading it back with `format=serialized`) or as
`.proto` text (what Java's serializers and people send), compiled by protoc in a worker
process (kop.registry.protobuf.compiler). Either way the registry keeps the base64 of
the descriptor, and writes text back when asked (kop.registry.protobuf.text). A file
may import Protobuf's own well-known types (google/protobuf/*.proto, as protobuf's
runtime holds them) and the files its references name (kop.registry.references).
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
from kop.registry.protobuf.compiler import COMPILER, FILE_NAME
from kop.registry.protobuf.text import proto_text
from kop.registry.references import Imports

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


async def canonical_protobuf_any(text: str, imports: Imports = (), owner: str = "") -> str:
    """canonical_protobuf's, for a schema given as base64 or as `.proto` text, which
    may import the files `imports` hold (its references, kop.registry.references);
    `owner`, the namespace whose compiles it counts among (ProtoCompiler)."""
    files = referenced(imports)
    file = _decoded(text, strict=False)
    if file is None:
        texts = tuple((n, proto_text(f)) for n, f in files)
        file = await COMPILER.compile(text, texts, owner)
    return _canonical(_checked(file, files))


def referenced(imports: Imports) -> list[tuple[str, descriptor_pb2.FileDescriptorProto]]:
    """The files of a schema's references, each under the name it is imported by."""
    out = []
    for name, text in imports:
        file = file_of(text)
        file.name = name
        out.append((name, file))
    return out


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


def _checked(
    file: descriptor_pb2.FileDescriptorProto,
    files: list[tuple[str, descriptor_pb2.FileDescriptorProto]] = [],  # noqa: B006 (read only)
) -> descriptor_pb2.FileDescriptorProto:
    # One name for every schema's own file: a file's name is how others import it, and
    # a reference names it anew (kop.registry.references), so the same messages sent as
    # text or as a descriptor named otherwise are one schema, as in Confluent's registry
    # (whose clients rename the file too). A Pulsar producer's file is renamed likewise.
    file.name = FILE_NAME
    names = {name for name, _ in files}
    for name in names & (set(WELL_KNOWN) | {file.name}):
        raise invalid_schema(f"reference {name!r} would stand for the file {name!r} itself")
    for dependency in file.dependency:
        if dependency not in WELL_KNOWN and dependency not in names:
            raise invalid_schema(
                f"the schema imports {dependency!r}, which no reference names (Protobuf's "
                "well-known types need none)"
            )
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    every = [*(one for _, one in files), file]
    for imported in [known for one in every for known in imports_of(one)]:
        if imported.name not in added:
            added.add(imported.name)
            pool.Add(imported)
    try:
        for _, one in files:
            pool.Add(one)
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
        if name in WELL_KNOWN:  # the others are the schema's references
            visit(name)
    return out
