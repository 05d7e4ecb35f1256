"""Schema compatibility strategies, decided as Pulsar's broker decides them for Avro.

The registry checks a schema before it asks Pulsar (to answer Confluent's
`/compatibility` requests, which Pulsar's own endpoint cannot: it answers an
incompatible schema with a 500), and the in-memory twin of Pulsar's schema registry
(tests/sim) checks with it too, so both must say what Pulsar says. Pulsar builds
Avro's SchemaValidator (`canRead`, `canBeRead`, `mutualRead`; `validateLatest` or
`validateAll`) on Avro's reader/writer compatibility; this is the same check through
Apache Avro's Python port of it, `ReaderWriterCompatibilityChecker`.

Directions, as Pulsar's and Confluent's documentation define them:
- BACKWARD: the new schema can read data written with the latest one;
- FORWARD: the latest schema can read data written with the new one;
- FULL: both;
- *_TRANSITIVE: the same against every version in the history, not just the latest;
- ALWAYS_COMPATIBLE: anything goes; ALWAYS_INCOMPATIBLE: nothing may follow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TypeVar

import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from kop.registry.json_compat import Budget, why_cannot_read
from kop.registry.protobuf import compat as protobuf_compat
from kop.registry.protobuf.descriptors import file_of
from kop.registry.schemas import JSON, PROTOBUF, Schema
from kop.storage.schemas import STRATEGIES

T = TypeVar("T")

# Confluent's compatibility levels as Pulsar strategies: the same names, but NONE is
# Pulsar's ALWAYS_COMPATIBLE (the one level that checks nothing).
CONFLUENT_TO_PULSAR: Mapping[str, str] = MappingProxyType(
    {
        "NONE": "ALWAYS_COMPATIBLE",
        "BACKWARD": "BACKWARD",
        "BACKWARD_TRANSITIVE": "BACKWARD_TRANSITIVE",
        "FORWARD": "FORWARD",
        "FORWARD_TRANSITIVE": "FORWARD_TRANSITIVE",
        "FULL": "FULL",
        "FULL_TRANSITIVE": "FULL_TRANSITIVE",
    }
)

# The reverse. Pulsar's ALWAYS_INCOMPATIBLE (a topic whose schema may never change)
# has no Confluent level: it maps to None, and a caller shows it as it sees fit (a
# Confluent client would refuse an unknown level name, so it must not be sent as one
# where a client parses it).
PULSAR_TO_CONFLUENT: Mapping[str, str | None] = MappingProxyType(
    {
        **{pulsar: confluent for confluent, pulsar in CONFLUENT_TO_PULSAR.items()},
        "ALWAYS_INCOMPATIBLE": None,
    }
)


def check(
    strategy: str, new: avro.schema.Schema, history: Sequence[avro.schema.Schema]
) -> str | None:
    """None if `new` may follow `history` (oldest first) under `strategy`, else why
    not, in one line. Equal schemas are the caller's business: Pulsar answers an upload
    equal to a version in the history with that version before it checks anything,
    whatever the strategy (ALWAYS_INCOMPATIBLE too)."""
    return _decide(strategy, _cannot_read, new, history)


def check_schema(strategy: str, new: Schema, history: Sequence[Schema]) -> str | None:
    """`check` for the registry's schemas of any type it serves: Avro's rules for Avro,
    kop.registry.json_compat's for JSON Schema; a change of type is refused as Pulsar
    refuses it (but where the strategy checks nothing)."""
    if strategy == "ALWAYS_COMPATIBLE" or not history:
        return _decide(strategy, _cannot_read, None, [])
    for old in history if strategy.endswith("_TRANSITIVE") else history[-1:]:
        if old.type != new.type:
            return f"{strategy}: the schema type {new.type} differs from the latest's {old.type}"
    if new.type == JSON:
        budget = Budget()  # one for the request, however long the history

        def cannot_read(reader: object, writer: object) -> str | None:
            return why_cannot_read(reader, writer, budget)

        return _decide(strategy, cannot_read, new.document(), [h.document() for h in history])
    if new.type == PROTOBUF:
        reads = protobuf_compat.why_cannot_read
        return _decide(strategy, reads, file_of(new.text), [file_of(h.text) for h in history])
    return _decide(strategy, _cannot_read, new.parsed(), [h.parsed() for h in history])


def _decide(
    strategy: str, cannot_read: Callable[[T, T], str | None], new: T | None, history: Sequence[T]
) -> str | None:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown compatibility strategy {strategy!r}")
    if not history or new is None or strategy == "ALWAYS_COMPATIBLE":
        return None
    if strategy == "ALWAYS_INCOMPATIBLE":
        return "the strategy ALWAYS_INCOMPATIBLE lets no schema follow another"
    transitive = strategy.endswith("_TRANSITIVE")
    base = strategy.removesuffix("_TRANSITIVE")
    compared = list(enumerate(history)) if transitive else [(len(history) - 1, history[-1])]
    # Newest first, as Avro's validateAll walks them: the reason names the nearest
    # version that refuses.
    for index, old in reversed(compared):
        which = "the latest schema" if index == len(history) - 1 else f"history[{index}]"
        if base in ("BACKWARD", "FULL"):
            why = cannot_read(new, old)
            if why is not None:
                return f"{strategy}: the new schema cannot read data written with {which}: {why}"
        if base in ("FORWARD", "FULL"):
            why = cannot_read(old, new)
            if why is not None:
                return f"{strategy}: {which} cannot read data written with the new schema: {why}"
    return None


def _cannot_read(reader: avro.schema.Schema, writer: avro.schema.Schema) -> str | None:
    """Why `reader` cannot read what `writer` wrote (None: it can). A fresh checker per
    pair: the checker memoizes by object identity."""
    checker = ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]  # avro's __init__
    result = checker.get_compatibility(reader, writer)
    if result.compatibility is not SchemaCompatibilityType.incompatible:
        return None
    kinds = ", ".join(sorted({kind.value for kind in result.incompatibilities}))
    where = ", ".join(sorted(result.locations))
    said = "; ".join(sorted(result.messages))
    return f"{kinds} at {where} ({said})"
