"""Confluent's framing of a record value, taken off on the way into Pulsar and put back
on the way out (issue 38, docs/schema-registry.md).

A Kafka producer with a Schema Registry serializer writes each value as a magic byte 0,
the schema's id (4 bytes, big-endian), then the Avro payload. A Pulsar consumer with an
`AvroSchema` expects the bare payload, and the schema version in the entry's metadata.
So a record whose id is a version of its topic's schema in Pulsar is stored without the
five bytes, in an entry that names that version; an entry that names a version (kop's,
or a typed Pulsar producer's) is read back with the framing of that version's id. Every
other record passes as it is: no framing, an id that is not one of the topic's versions,
a null value.

A Pulsar entry names one schema version for all its messages, so records of different
versions go to different entries.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import replace

from kop.entries.formats import P_ENTRY
from kop.protocol.records import Record
from kop.storage import batch_layout
from kop.storage.types import StoredEntry

MAGIC = 0
PREFIX = 5
_ID = struct.Struct(">bI")
_VERSION = struct.Struct(">q")


def version_bytes(version: int) -> bytes:
    """A Pulsar schema version as its metadata carries it."""
    return _VERSION.pack(version)


def version_of(raw: bytes) -> int | None:
    return _VERSION.unpack(raw)[0] if len(raw) == _VERSION.size else None


def schema_id(value: bytes | None) -> int | None:
    """The id a framed value names (None: the value is not framed)."""
    if value is None or len(value) < PREFIX or value[0] != MAGIC:
        return None
    return int(_ID.unpack_from(value)[1])


def framed(payload: bytes, sid: int) -> bytes:
    return _ID.pack(MAGIC, sid) + payload


def unframed(
    records: Sequence[Record], version: Callable[[int], int | None]
) -> list[tuple[int | None, list[Record]]]:
    """Runs of consecutive records by the Pulsar version their values are in (None: kept
    as they are), values without their framing. `version`: the topic's version of an id."""
    runs: list[tuple[int | None, list[Record]]] = []
    for r in records:
        sid = schema_id(r.value)
        v = None if sid is None else version(sid)
        if v is not None and r.value is not None:
            r = replace(r, value=r.value[PREFIX:])
        if runs and runs[-1][0] == v:
            runs[-1][1].append(r)
        else:
            runs.append((v, [r]))
    return runs


def reframed(entry: StoredEntry, sid: int) -> StoredEntry:
    """`entry` with every non-null message value framed with `sid` (its version's id)."""
    if entry.message is not None:
        m = entry.message
        if m.null_value or m.properties.get(P_ENTRY) == "batch":  # a kafka-format entry
            return entry
        return replace(entry, message=replace(m, payload=framed(m.payload, sid)))
    out = batch_layout.with_payloads(entry.batch, entry.count, lambda p: framed(p, sid))
    return entry if out is None else replace(entry, batch=out)
