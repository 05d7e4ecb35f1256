"""A topic's subject against the topic's history in Pulsar: what Pulsar keeps for a
version the registry registers, what a version of the history is to the registry, and
the table records that bring a subject up to the history.

A schema with references (kop.registry.references) is kept by Pulsar whole, with what
they name written into it (Avro: the referenced types defined where first used;
Protobuf: the referenced files in the descriptor set), because Pulsar's clients read a
topic's schema alone. Read back, such a version is no longer the schema registered
with its references; so a version the table already holds as a schema with references
stays that schema as long as Pulsar's version is what that schema uploads.
"""

from __future__ import annotations

import functools
import json

from kop.registry import errors, subjects
from kop.registry.json_avro import NotAvro, avro_of, json_schema_of
from kop.registry.protobuf.native import PROTOBUF_NATIVE, native_data, schema_of_native
from kop.registry.schemas import AVRO, JSON, PROTOBUF, Schema, canonical_avro, canonical_json
from kop.registry.state import NamespaceState, Record, Version, version_record
from kop.storage.schemas import PulsarSchema

History = list[tuple[PulsarSchema, Schema]]


def pulsar_data(schema: Schema) -> str:
    """What Pulsar keeps for a topic's version: an Avro schema as it is, a JSON Schema
    as the Avro record that reads its documents (kop.registry.json_avro), a Protobuf
    schema as PROTOBUF_NATIVE with its first message the root
    (kop.registry.protobuf.native); with references, whole (see the docstring)."""
    if schema.type == PROTOBUF:
        try:
            return native_data(schema.text, schema.imports)
        except ValueError as exc:
            raise errors.invalid_schema(str(exc)) from None
    if schema.type == AVRO and schema.references:
        return json.dumps(schema.parsed().to_json(), separators=(",", ":"))
    if schema.type != JSON:
        return schema.text
    try:
        return avro_of(schema.document(), schema.text)
    except NotAvro as exc:
        raise errors.invalid_schema(
            f"a topic's JSON Schema is kept by Pulsar in Avro, and this one has no Avro form: {exc}"
        ) from None


def shown(h: PulsarSchema) -> Schema | None:
    """The schema a version of the topic's history is to the registry: Avro as it is,
    JSON as the JSON Schema kop stored on it (or that its Avro record reads); None for
    the types the registry does not show. Pulsar checked what it took, so an Avro
    definition parses; kop's own JSON Schema on it is checked again all the same (a
    Pulsar client may have written any property)."""
    try:
        if h.type == AVRO:
            return Schema(AVRO, canonical_avro(h.data))
        if h.type == JSON:
            document = json_schema_of(json.loads(canonical_avro(h.data)))
            return Schema(JSON, canonical_json(json.dumps(document)))
        if h.type == PROTOBUF_NATIVE:
            text = schema_of_native(h.data)
            return None if text is None else Schema(PROTOBUF, text)
    except errors.RegistryError:
        return None
    return None


def shown_history(history: list[PulsarSchema], kept: dict[int, Schema]) -> History:
    """The versions the subject shows, with what each is to the registry: the schema
    with references `kept` holds for it (Pulsar version -> schema) while Pulsar's
    version is what that schema uploads, else what Pulsar's version is alone."""
    out: History = []
    for h in history:
        mine = kept.get(h.version)
        if mine is not None and mine.references and is_uploaded(mine, h):
            out.append((h, mine))
        elif (alone := shown(h)) is not None:
            out.append((h, alone))
    return out


def is_uploaded(schema: Schema, h: PulsarSchema) -> bool:
    """Whether Pulsar's version `h` is what registering `schema` uploads (as Pulsar
    compares: Avro as parsed, PROTOBUF_NATIVE byte for byte)."""
    uploads = _uploaded(schema)
    if uploads is None:
        return False
    if schema.type == PROTOBUF:
        return h.type == PROTOBUF_NATIVE and h.data == uploads
    alone = shown(h)
    if alone is None or alone.type != schema.type:
        return False
    # a JSON version keeps the JSON Schema itself (json_avro)
    return alone.text == (schema.text if schema.type == JSON else uploads)


@functools.lru_cache(maxsize=128)
def _uploaded(schema: Schema) -> str | None:
    """`pulsar_data` (Avro canonical, as `shown` reads it back), once per schema: every
    read of a topic's subject compares its versions with references against it."""
    try:
        data = pulsar_data(schema)
    except errors.RegistryError:
        return None
    return canonical_avro(data) if schema.type == AVRO else data


def kept_versions(state: NamespaceState, subject: str) -> dict[int, Schema]:
    """The schemas the table holds for the subject's versions, by Pulsar version."""
    found = state.subjects.get(subject, {})
    return {n - 1: state.schemas[v.id] for n, v in found.items() if v.id in state.schemas}


def behind(state: NamespaceState, subject: str, history: History) -> bool:
    have = state.subjects.get(subject, {})
    wanted = {h.version + 1 for h, _ in history}
    if set(have) != wanted:
        return True
    return any(state.schemas.get(have[h.version + 1].id) != shown for h, shown in history)


def follow(state: NamespaceState, ns: str, subject: str, history: History) -> list[Record]:
    records: list[Record] = []
    have = state.subjects.get(subject, {})
    wanted = {h.version + 1 for h, _ in history}
    for number in have:
        if number not in wanted:
            records.append(version_record(ns, subject, number, None))
    for h, schema in history:
        number = h.version + 1
        new, schema_id = subjects.with_id(state, ns, schema)
        if new:  # the next id must count this one
            state = with_schema(state, schema_id, schema)
        records += new
        current = have.get(number)
        if current is None or current.id != schema_id:
            records.append(version_record(ns, subject, number, Version(schema_id)))
    return records


def with_schema(state: NamespaceState, schema_id: int, schema: Schema) -> NamespaceState:
    """A copy of `state` that knows `schema` by `schema_id` (a decision that hands out
    several ids at once)."""
    copy = NamespaceState(dict(state.schemas), dict(state.ids), state.subjects, state.configs)
    copy.schemas[schema_id] = schema
    copy.ids[schema.fingerprint] = schema_id
    return copy
