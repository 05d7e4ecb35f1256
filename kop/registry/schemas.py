"""A schema as the registry keeps it: its type, and its text in one canonical form, so
that the same schema written with other spacing is recognised as already registered
(and gets the id it has), as Confluent's registry does.

Avro is parsed by Apache Avro's own library, a JSON Schema checked against its draft's
metaschema by `jsonschema` (the reference implementation): what they refuse is refused
with Confluent's 42201. A Protobuf schema is kept as the base64 of its FileDescriptorProto
(kop.registry.protobuf.descriptors), built by protobuf's own descriptor pool, and shown
as `.proto` text unless the client asks for `format=serialized`, as Confluent's does.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import avro.errors
import avro.name
import avro.schema
import jsonschema.exceptions
import jsonschema.validators

from kop.registry.errors import invalid_schema, too_large
from kop.registry.protobuf.descriptors import canonical_protobuf_any, file_of
from kop.registry.protobuf.text import proto_text
from kop.registry.references import Imports, Reference, Resolve, imports_of, references_of

AVRO = "AVRO"
JSON = "JSON"
PROTOBUF = "PROTOBUF"
SERVED_TYPES = (AVRO, JSON, PROTOBUF)
MAX_SCHEMA_BYTES = 1 << 20  # a schema's text; Confluent's clients send far less


@dataclass(frozen=True, slots=True)
class Schema:
    type: str  # AVRO, JSON or PROTOBUF
    text: str  # canonical: compact JSON of the parsed schema; a Protobuf's descriptor in base64
    references: tuple[Reference, ...] = ()
    # what the references resolved to when it was registered (kop.registry.references):
    # fixed by them, so no part of the schema's identity
    imports: Imports = field(default=(), compare=False)

    @property
    def fingerprint(self) -> str:
        """Equal for schemas the registry treats as one (one id per namespace): the same
        text with other references is another schema, as in Confluent's registry."""
        named = "".join(f"\0{r.name}\0{r.subject}\0{r.version}" for r in self.references)
        return hashlib.sha256(f"{self.type}\0{self.text}{named}".encode()).hexdigest()

    def parsed(self) -> avro.schema.Schema:
        """An Avro schema with the types its references define."""
        names = avro.name.Names()
        for _name, text in self.imports:
            avro.schema.make_avsc_object(json.loads(text), names)
        return avro.schema.make_avsc_object(json.loads(self.text), names)

    def document(self) -> Any:
        """A JSON Schema's document (JSON's: as json.loads reads it)."""
        return json.loads(self.text)


async def parse(
    text: object,
    schema_type: object = None,
    references: object = None,
    resolve: Resolve | None = None,
    owner: str = "",
) -> Schema:
    """The schema a client sent, checked and canonical; RegistryError (42201) if it is
    not one kop serves. Async: a Protobuf schema in `.proto` text is compiled in a
    worker process (`owner`: the namespace asking, whose compiles are bounded), and
    `resolve` finds the versions its references name (none may be named without it)."""
    if schema_type in (None, ""):
        schema_type = AVRO
    if not isinstance(text, str) or not text.strip():
        raise invalid_schema("the schema must be a non-empty string")
    if len(text.encode()) > MAX_SCHEMA_BYTES:
        raise too_large(MAX_SCHEMA_BYTES)
    if schema_type not in SERVED_TYPES:
        raise invalid_schema(
            f"schemaType {schema_type!r} is not served by kop (AVRO, JSON and PROTOBUF are)"
        )
    refs = references_of(references, protobuf=schema_type == PROTOBUF)
    imports: Imports = ()
    if refs:
        if resolve is None:
            raise invalid_schema("references are not taken here (Confluent's API takes them)")
        imports = await imports_of(refs, schema_type, resolve)
    if schema_type == JSON:  # a `$ref` to a reference's name is checked by its text
        return Schema(JSON, canonical_json(text), refs, imports)
    if schema_type == PROTOBUF:
        return Schema(PROTOBUF, await canonical_protobuf_any(text, imports, owner), refs, imports)
    return Schema(AVRO, canonical_avro(text, imports), refs, imports)


def shown(schema: Schema, fmt: str | None = None) -> str:
    """The schema's text as the registry answers it: a Protobuf schema as `.proto` text,
    or with `fmt` "serialized" as the base64 of its descriptor (the other types have one
    form)."""
    if schema.type == PROTOBUF and fmt != "serialized":
        return proto_text(file_of(schema.text))
    return schema.text


def canonical_avro(text: str, imports: Imports = ()) -> str:
    """The compact JSON of an Avro schema (RegistryError 42201 if it is not one); the
    types `imports` define are named in it, not written out again."""
    try:
        names = avro.name.Names()
        for _name, imported in imports:
            avro.schema.make_avsc_object(json.loads(imported), names)
        known = avro.name.Names()
        known.names = dict(names.names)
        parsed = avro.schema.make_avsc_object(json.loads(text), names)
        return json.dumps(_java_order(parsed.to_json(known)), separators=(",", ":"))
    except (avro.errors.AvroException, ValueError, TypeError, KeyError) as exc:
        raise invalid_schema(str(exc) or type(exc).__name__) from None
    except RecursionError:
        raise invalid_schema("the schema is nested too deeply") from None


def canonical_json(text: str) -> str:
    """The compact JSON of a JSON Schema, its keys in the order written (as Confluent's
    registry keeps it); RegistryError 42201 if it is no JSON Schema of its draft
    (`$schema`; draft 7 when it names none)."""
    try:
        document = json.loads(text)
        validator = jsonschema.validators.validator_for(
            document, default=jsonschema.validators.Draft7Validator
        )
        validator.check_schema(document)
    except ValueError as exc:
        raise invalid_schema(f"not JSON: {exc}") from None
    except jsonschema.exceptions.SchemaError as exc:
        raise invalid_schema(f"not a JSON Schema: {exc.message}") from None
    except RecursionError:
        raise invalid_schema("the schema is nested too deeply") from None
    if not isinstance(document, (dict, bool)):
        raise invalid_schema("a JSON Schema is an object or a boolean")
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


# Apache Avro's Java `Schema.toString()` orders keys so (what Confluent's registry
# returns); Python's library orders a field's `type` before its `name`.
_TYPE_KEYS = ("type", "name", "namespace", "doc", "fields", "symbols", "items", "values", "size")
_FIELD_KEYS = ("name", "type", "doc", "default", "order", "aliases")


def _java_order(value: Any, field: bool = False) -> Any:
    if isinstance(value, list):
        return [_java_order(v) for v in value]
    if not isinstance(value, dict):
        return value
    first = _FIELD_KEYS if field else _TYPE_KEYS
    keys = [k for k in first if k in value] + [k for k in value if k not in first]
    out: dict[str, Any] = {}
    for k in keys:
        v = value[k]
        if k == "fields" and isinstance(v, list):
            out[k] = [_java_order(f, field=True) for f in v]
        elif k in ("type", "items", "values"):
            out[k] = _java_order(v)
        else:
            out[k] = v
    return out
