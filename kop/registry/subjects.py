"""What a subject holds, read from a namespace's state, and the records a change of it
writes: the part of the registry that is the same whether Pulsar or kop keeps the
subject's schemas (kop.registry.service says which)."""

from __future__ import annotations

from kop.registry import errors
from kop.registry.references import Reference
from kop.registry.schemas import Schema
from kop.registry.state import NamespaceState, Record, Version, id_record, version_record
from kop.registry.strategies import CONFLUENT_TO_PULSAR, check_schema

LATEST = -1


def versions(state: NamespaceState, subject: str, deleted: bool = False) -> list[int]:
    """The subject's versions, oldest first (soft-deleted ones too with `deleted`)."""
    found = state.subjects.get(subject, {})
    return sorted(n for n, v in found.items() if not v.gone and (deleted or not v.deleted))


def known(state: NamespaceState, subject: str) -> bool:
    return bool(versions(state, subject, deleted=True))


def version(state: NamespaceState, subject: str, wanted: int, deleted: bool = False) -> int:
    """The version `wanted` names (LATEST: the newest); 40401 / 40402 if none."""
    live = versions(state, subject, deleted)
    if not live:
        raise errors.subject_not_found(subject)
    if wanted == LATEST:
        return live[-1]
    if wanted not in live:
        raise errors.version_not_found(wanted)
    return wanted


def schema_of(state: NamespaceState, subject: str, number: int) -> tuple[int, Schema]:
    schema_id = state.subjects[subject][number].id
    return schema_id, state.schemas[schema_id]


def find(state: NamespaceState, subject: str, schema: Schema, deleted: bool = False) -> int | None:
    """The newest version of `subject` that is `schema`, if any."""
    schema_id = state.id_of(schema)
    if schema_id is None:
        return None
    matching = [
        n for n in versions(state, subject, deleted) if state.subjects[subject][n].id == schema_id
    ]
    return matching[-1] if matching else None


def with_id(state: NamespaceState, ns: str, schema: Schema) -> tuple[list[Record], int]:
    """The schema's id in the namespace, and the record that hands it out if it is new."""
    schema_id = state.id_of(schema)
    if schema_id is not None:
        return [], schema_id
    schema_id = state.next_id()
    return [id_record(ns, schema_id, schema)], schema_id


def referenced_by(state: NamespaceState, subject: str, number: int) -> list[int]:
    """Ids of the schemas that reference version `number` of `subject` and that a
    version of some subject still holds (deleted softly or not)."""
    held = {v.id for found in state.subjects.values() for v in found.values() if not v.gone}
    return sorted(
        schema_id
        for schema_id, schema in state.schemas.items()
        if schema_id in held
        and any(r.subject == subject and r.version == number for r in schema.references)
    )


def unreferenced(state: NamespaceState, subject: str, numbers: list[int]) -> None:
    """42206 when a schema references one of `numbers` (Confluent keeps such a version)."""
    for number in numbers:
        by = referenced_by(state, subject, number)
        if by:
            raise errors.reference_exists(subject, number, by)


def still_there(state: NamespaceState, references: tuple[Reference, ...]) -> None:
    """42201 unless every version `references` name is still there when the schema is
    written: it was read before, and a delete on another instance may have come between
    (the delete, in turn, sees the schema once it is written: one of the two wins)."""
    for ref in references:
        if ref.version not in versions(state, ref.subject):
            raise errors.invalid_schema(
                f"reference {ref.name!r}: subject '{ref.subject}' version {ref.version} was "
                "deleted meanwhile"
            )


def soft_delete(state: NamespaceState, ns: str, subject: str) -> tuple[list[Record], list[int]]:
    live = versions(state, subject)
    if not live:
        if known(state, subject):
            raise errors.subject_soft_deleted(subject)
        raise errors.subject_not_found(subject)
    unreferenced(state, subject, live)
    found = state.subjects[subject]
    return [version_record(ns, subject, n, Version(found[n].id, deleted=True)) for n in live], live


def delete_version(
    state: NamespaceState, ns: str, subject: str, wanted: int, permanent: bool,
    tombstone: bool,
) -> tuple[list[Record], int]:  # fmt: skip
    """One version deleted: soft, or for good once soft-deleted (`tombstone`: its record
    removed; else kept as gone, for a subject whose history Pulsar keeps)."""
    number = version(state, subject, wanted, deleted=permanent or wanted != LATEST)
    current = state.subjects[subject][number]
    if not permanent and current.deleted:
        raise errors.version_soft_deleted(subject, number)
    if permanent and not current.deleted:
        raise errors.version_not_soft_deleted(subject, number)
    unreferenced(state, subject, [number])
    if permanent and tombstone:
        return [version_record(ns, subject, number, None)], number
    gone = Version(current.id, deleted=True, gone=permanent)
    return [version_record(ns, subject, number, gone)], number


def history(state: NamespaceState, subject: str, against: list[int]) -> list[Schema]:
    """The schemas of versions `against` of `subject`."""
    return [schema_of(state, subject, n)[1] for n in against]


def why_not_after(schema: Schema, level: str, history: list[Schema]) -> str | None:
    """Why `schema` may not follow `history` (those versions' schemas, oldest first)
    under the Confluent `level` (None: it may; a Pulsar strategy name is taken as it
    is). A pure function of immutable schemas, so that a costly check (a JSON Schema's,
    up to its budget) can run off the event loop."""
    return check_schema(CONFLUENT_TO_PULSAR.get(level, level), schema, history)
