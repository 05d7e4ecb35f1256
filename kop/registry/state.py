"""The registry's own records, and the state they fold into.

Pulsar keeps a topic's schemas, but not what Confluent's API adds: ids, subjects that
are no topic's (`<topic>-key`, the record-name strategies), soft deletes, a subject's
compatibility. kop keeps those as records of a compacted system table, one namespace's
records in one partition (kop.registry.table). Each record's key says what it is, its
payload what it holds (None: deleted), so a load applies them in order, latest wins,
and sees the same state before and after compaction:

    <tenant/ns>|id|<id>                   {"type": "AVRO", "schema": <canonical text>,
                                           "references": [...], "imports": [[name, text]...]}
    <tenant/ns>|v|<subject>|<version>     {"id": <id>, "deleted": <bool>, "gone": <bool>}
    <tenant/ns>|cfg|<subject>             {"compatibility": <level>}

Ids are numbered per namespace: a tenant's ids say nothing of another's schemas, and
`/schemas/ids/{id}` can only ever find the asker's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kop.registry.references import Imports, Reference
from kop.registry.schemas import Schema


class MalformedRecord(Exception):
    """A record of the registry table that kop cannot read."""


@dataclass(frozen=True, slots=True)
class Version:
    id: int
    deleted: bool = False
    gone: bool = False  # deleted for good, in a history Pulsar keeps (not shown at all)


@dataclass
class NamespaceState:
    schemas: dict[int, Schema] = field(default_factory=dict)
    ids: dict[str, int] = field(default_factory=dict)  # fingerprint -> id
    subjects: dict[str, dict[int, Version]] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)  # subject -> level

    def next_id(self) -> int:
        return max(self.schemas, default=0) + 1

    def id_of(self, schema: Schema) -> int | None:
        return self.ids.get(schema.fingerprint)


Record = tuple[str, bytes | None]


def id_record(ns: str, schema_id: int, schema: Schema) -> Record:
    body: dict[str, object] = {"type": schema.type, "schema": schema.text}
    if schema.references:  # what they resolved to is kept with them (kop.registry.references)
        body["references"] = [r.to_json() for r in schema.references]
        body["imports"] = [list(one) for one in schema.imports]
    return f"{ns}|id|{schema_id}", json.dumps(body).encode()


def version_record(ns: str, subject: str, version: int, v: Version | None) -> Record:
    key = f"{ns}|v|{subject}|{version}"
    if v is None:
        return key, None
    return key, json.dumps({"id": v.id, "deleted": v.deleted, "gone": v.gone}).encode()


def config_record(ns: str, subject: str, level: str | None) -> Record:
    key = f"{ns}|cfg|{subject}"
    return key, None if level is None else json.dumps({"compatibility": level}).encode()


class RegistryState:
    """Every namespace's state in one table partition."""

    def __init__(self) -> None:
        self.namespaces: dict[str, NamespaceState] = {}

    def of(self, ns: str) -> NamespaceState:
        return self.namespaces.get(ns) or NamespaceState()

    def apply(self, key: str, payload: bytes | None) -> None:
        """One record, in table order (MalformedRecord if unreadable)."""
        try:
            ns, kind, rest = key.split("|", 2)
            state = self.namespaces.setdefault(ns, NamespaceState())
            if kind == "id":
                _apply_id(state, int(rest), payload)
            elif kind == "v":
                subject, version = rest.rsplit("|", 1)
                _apply_version(state, subject, int(version), payload)
            elif kind == "cfg":
                _apply_config(state, rest, payload)
            else:
                raise MalformedRecord(f"unknown record kind {kind!r}")
        except (ValueError, KeyError, TypeError) as exc:
            raise MalformedRecord(f"{key!r}: {exc}") from None


def _body(payload: bytes) -> dict[str, object]:
    value = json.loads(payload)
    if not isinstance(value, dict):
        raise TypeError("not an object")
    return value


def _apply_id(state: NamespaceState, schema_id: int, payload: bytes | None) -> None:
    old = state.schemas.pop(schema_id, None)
    if old is not None and state.ids.get(old.fingerprint) == schema_id:
        del state.ids[old.fingerprint]
    if payload is None:
        return
    body = _body(payload)
    kind, text = body["type"], body["schema"]
    if not isinstance(kind, str) or not isinstance(text, str):
        raise TypeError("type and schema must be strings")
    schema = Schema(kind, text, _references(body), _imports(body))
    state.schemas[schema_id] = schema
    state.ids.setdefault(schema.fingerprint, schema_id)


def _references(body: dict[str, object]) -> tuple[Reference, ...]:
    found = body.get("references", [])
    if not isinstance(found, list):
        raise TypeError("references must be a list")
    out = []
    for one in found:
        name, subject, version = one["name"], one["subject"], one["version"]
        if not isinstance(name, str) or not isinstance(subject, str) or type(version) is not int:
            raise TypeError("a reference is a name, a subject and a version")
        out.append(Reference(name, subject, version))
    return tuple(out)


def _imports(body: dict[str, object]) -> Imports:
    found = body.get("imports", [])
    if not isinstance(found, list):
        raise TypeError("imports must be a list")
    out = []
    for one in found:
        name, text = one
        if not isinstance(name, str) or not isinstance(text, str):
            raise TypeError("an import is a name and a text")
        out.append((name, text))
    return tuple(out)


def _apply_version(
    state: NamespaceState, subject: str, version: int, payload: bytes | None
) -> None:
    versions = state.subjects.setdefault(subject, {})
    if payload is None:
        versions.pop(version, None)
        if not versions:
            del state.subjects[subject]
        return
    body = _body(payload)
    schema_id, deleted, gone = body["id"], body.get("deleted", False), body.get("gone", False)
    if type(schema_id) is not int or type(deleted) is not bool or type(gone) is not bool:
        raise TypeError("id must be an integer, deleted and gone booleans")
    versions[version] = Version(schema_id, deleted, gone)


def _apply_config(state: NamespaceState, subject: str, payload: bytes | None) -> None:
    if payload is None:
        state.configs.pop(subject, None)
        return
    level = _body(payload)["compatibility"]
    if not isinstance(level, str):
        raise TypeError("compatibility must be a string")
    state.configs[subject] = level
