"""Schema references: a schema that names types another subject's version defines (an
Avro record of a shared record, a Protobuf file importing another file), as Confluent's
API writes them: `{"name": ..., "subject": ..., "version": ...}`.

A version never changes, so what a schema's references resolve to is fixed when it is
registered: kop keeps, with the schema, every schema its references name, also through
one another (`imports`, dependencies first). Nothing has to be looked up again to
compile, check or show it, and a version another schema references is not deleted
(42206), as Confluent's registry refuses.

Every part is bounded: the references of one schema, the schemas they bring in, their
bytes; a Protobuf reference's name is the path protoc reads the file under, so it is a
plain relative path (kop writes the files into a directory of their own).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kop.registry.errors import RegistryError, invalid_schema

MAX_REFERENCES = 100  # named by one schema
MAX_IMPORTS = 500  # brought in by them, also through one another
MAX_IMPORT_BYTES = 16 << 20
_PROTO_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*(/[A-Za-z0-9_][A-Za-z0-9_.\-]*)*")
_MAX_NAME = 255


@dataclass(frozen=True, slots=True)
class Reference:
    name: str  # Avro: the type's full name; Protobuf: the import path; JSON: the `$ref`
    subject: str
    version: int

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


# (import name, canonical text), dependencies before the schemas that import them
Imports = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Resolved:
    """A referenced version, as it was registered: its type, text and imports."""

    type: str
    text: str
    imports: Imports


Resolve = Callable[[Reference], Awaitable[Resolved]]


def references_of(value: object, protobuf: bool) -> tuple[Reference, ...]:
    """The references a request names (42201 for any malformed one)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise invalid_schema("references must be a list")
    if len(value) > MAX_REFERENCES:
        raise invalid_schema(f"a schema names at most {MAX_REFERENCES} references")
    out: list[Reference] = []
    for one in value:
        if not isinstance(one, dict):
            raise invalid_schema("a reference is an object: name, subject, version")
        name, subject, version = one.get("name"), one.get("subject"), one.get("version")
        if not isinstance(name, str) or not 0 < len(name) <= _MAX_NAME:
            raise invalid_schema(f"a reference's name is a string of 1 to {_MAX_NAME} characters")
        if not isinstance(subject, str) or not subject:
            raise invalid_schema(f"reference {name!r} names no subject")
        if type(version) is not int or not 0 < version < 1 << 31:
            raise invalid_schema(f"reference {name!r}: version must be 1 to 2^31-1")
        if protobuf and not _proto_path(name):
            raise invalid_schema(
                f"reference {name!r}: a Protobuf reference is the relative path the schema "
                "imports it by (letters, digits, _ . -, segments joined by /, no ..)"
            )
        out.append(Reference(name, subject, version))
    if len({r.name for r in out}) != len(out):
        raise invalid_schema("two references have one name")
    return tuple(out)


def _proto_path(name: str) -> bool:
    return bool(_PROTO_PATH.fullmatch(name)) and ".." not in name.split("/")


async def imports_of(references: tuple[Reference, ...], kind: str, resolve: Resolve) -> Imports:
    """Every schema `references` bring in, dependencies first, each name once (42201
    when one name would stand for two schemas, or past the bounds)."""
    out: dict[str, str] = {}
    size = 0

    def add(name: str, text: str) -> None:
        nonlocal size
        if name in out:
            if out[name] != text:
                raise invalid_schema(f"{name!r} names two different schemas among the references")
            return
        out[name] = text
        size += len(text)
        if len(out) > MAX_IMPORTS or size > MAX_IMPORT_BYTES:
            raise invalid_schema(
                f"the references bring in more than {MAX_IMPORTS} schemas or "
                f"{MAX_IMPORT_BYTES >> 20} MiB"
            )

    for ref in references:
        try:
            found = await resolve(ref)
        except RegistryError as exc:
            if exc.http in (401, 403):  # may not read it: said as for any other request
                raise
            raise invalid_schema(f"reference {ref.name!r}: {exc.message}") from None
        if found.type != kind:
            raise invalid_schema(
                f"reference {ref.name!r} is a {found.type} schema, this one {kind}"
            )
        for name, text in found.imports:
            add(name, text)
        add(ref.name, found.text)
    return tuple(out.items())
