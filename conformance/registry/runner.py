"""Runs every scenario on kop's registry and on the reference, step by step, and says
per scenario whether they agree; a difference is known (with its reason, in KNOWN) or a
failure."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from conformance.registry.client import Registry
from conformance.registry.scenarios import SCENARIOS

# scenario -> step -> why kop answers otherwise (a reason, never a shrug)
_ECHO = (
    "Apicurio echoes a `normalize` field kop does not serve (kop keeps no normalization "
    "setting); Confluent's registry echoes the request, and its clients read `compatibility`"
)
_CONFLICT = (
    "Apicurio answers these delete refusals with HTTP 409; Confluent's registry answers "
    "them 404 with the same error code (kop follows Confluent)"
)
_NO_LEVEL = (
    "Confluent's registry answers 40408 for a subject without a level of its own (its "
    "clients read it so); Apicurio answers 40401 for a subject without versions, and "
    "after a subject's level is removed, the global one"
)
_VERSION = (
    "Confluent's registry refuses a version that is not `latest`, -1 or 1..2^31-1 with "
    "422/42202 (its VersionId); Apicurio answers 40402"
)
_STRING_TO_BYTES = (
    "Confluent's Protobuf rules put string and bytes in one wire group, so a reader of "
    "bytes reads what a writer of strings wrote (kop follows them); Apicurio's checker "
    "refuses any change of a field's type"
)
_UNPARSEABLE = (
    "Confluent's registry refuses a schema it cannot parse with 422/42201 (invalid "
    "schema), as kop does; Apicurio answers 409 as if incompatible"
)
# scenario -> step -> why kop answers otherwise (a reason, never a shrug)
KNOWN: dict[str, dict[str, str]] = {
    "evolve-under-backward": {"global level": _ECHO},
    "subject-level-of-a-kept-subject": {
        "set FULL": _ECHO, "no level yet": _NO_LEVEL, "gone": _NO_LEVEL,
    },
    "delete-versions": {
        "global level": _ECHO, "permanent before soft": _CONFLICT, "soft again": _CONFLICT,
    },
    "delete-subject": {"global level": _ECHO, "permanent before soft": _CONFLICT},
    "bad-requests": {"version abc": _VERSION, "version 0": _VERSION},
    "listing-subjects": {
        "global level": _ECHO,
        "subjects": "Apicurio ignores `subjectPrefix` (Confluent's registry lists only the "
        "subjects it prefixes, as kop does) and lists every subject of the run",
        "with deleted": "likewise `subjectPrefix`",
    },
    "check-compatibility": {"set BACKWARD": _ECHO},
    "json-schema-subjects": {
        "global level": _ECHO,
        "lookup": "Apicurio leaves `schemaType` out of a lookup's answer; Confluent's registry "
        "names it for every type but AVRO (its clients build the schema from it), as kop does",
        "a key's string": "Apicurio refuses the JSON Schema {\"type\": \"string\"} with 42201; "
        "it is valid under draft 7's metaschema, and Confluent's registry takes any valid "
        "JSON Schema, as kop does for a subject that is no topic's",
    },
    "protobuf-subjects": {
        "global level": _ECHO,
        "lookup": "as for JSON Schema: Apicurio leaves `schemaType` out of a lookup's answer",
        "check string to bytes": _STRING_TO_BYTES,
        "string to bytes": _STRING_TO_BYTES,
        "not a descriptor": _UNPARSEABLE,
    },
    "protobuf-text": {
        "global level": _ECHO,
        "unknown type": _UNPARSEABLE,
        "imports a file": _UNPARSEABLE + "; here the file imported is named by no reference",
    },
}  # fmt: skip


@dataclass
class Cell:
    scenario: str
    differences: list[tuple[str, Any, Any, str | None]]  # step, kop, reference, known why
    stale: list[str]  # known differences that did not show up

    @property
    def verdict(self) -> str:
        if self.stale:
            return "STALE"
        if not self.differences:
            return "agree"
        if all(why for *_, why in self.differences):
            return "known"
        return "DIFFER"


def run(kop: str, reference: str, only: list[str]) -> list[Cell]:
    nonce = uuid.uuid4().hex[:6]
    cells = []
    for name, scenario in SCENARIOS.items():
        if only and not any(name.startswith(p) for p in only):
            continue
        prefix = f"{name}-{nonce}-"
        seen = []
        for base in (kop, reference):
            r = Registry(base, prefix)
            scenario(r)
            seen.append(r.seen)
        cells.append(_judge(name, seen[0], seen[1]))
    return cells


def _judge(name: str, kop: list[tuple[str, Any]], ref: list[tuple[str, Any]]) -> Cell:
    differences, known = [], KNOWN.get(name, {})
    for (step, mine), (_, theirs) in zip(kop, ref, strict=True):
        if mine != theirs:
            differences.append((step, mine, theirs, known.get(step)))
    shown = {step for step, *_ in differences}
    return Cell(name, differences, sorted(set(known) - shown))
