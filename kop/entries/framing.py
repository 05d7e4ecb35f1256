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

A Protobuf value carries more after the id: the message indexes that name which message
of the schema's file it is (b"\x00" for the first). Pulsar's PROTOBUF_NATIVE schema names
one root message, so a value is stored bare only when its indexes are those of its
version's root (`tails`); one naming another message keeps its framing.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
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


class IdVersions(dict[int, int]):
    """Confluent id -> the topic's Pulsar version, and `tails`: what a framed value
    carries after an id whose values carry more (Protobuf's message indexes)."""

    def __init__(
        self, versions: Mapping[int, int] | None = None, tails: Mapping[int, bytes] | None = None
    ) -> None:
        super().__init__(versions or {})
        self.tails = {sid: tail for sid, tail in (tails or {}).items() if tail}


def framed(payload: bytes, sid: int, tail: bytes = b"") -> bytes:
    return _ID.pack(MAGIC, sid) + tail + payload


def unframed(
    records: Sequence[Record],
    version: Callable[[int], int | None],
    tails: Mapping[int, bytes] | None = None,
) -> list[tuple[int | None, list[Record]]]:
    """Runs of consecutive records by the Pulsar version their values are in (None: kept
    as they are), values without their framing. `version`: the topic's version of an id;
    `tails`: what must follow an id for its value to be that version's (IdVersions)."""
    runs: list[tuple[int | None, list[Record]]] = []
    for r in records:
        sid = schema_id(r.value)
        v = None if sid is None else version(sid)
        if v is not None and r.value is not None:
            tail = b"" if tails is None or sid is None else tails.get(sid, b"")
            if r.value.startswith(tail, PREFIX):
                r = replace(r, value=r.value[PREFIX + len(tail) :])
            else:
                v = None  # another message of the file than the version's root
        if runs and runs[-1][0] == v:
            runs[-1][1].append(r)
        else:
            runs.append((v, [r]))
    return runs


def reframed(entry: StoredEntry, sid: int, tail: bytes = b"") -> StoredEntry:
    """`entry` with every non-null message value framed with `sid` (its version's id)
    and `tail` (its version's message indexes, for Protobuf)."""
    if entry.message is not None:
        m = entry.message
        if m.null_value or m.properties.get(P_ENTRY) == "batch":  # a kafka-format entry
            return entry
        return replace(entry, message=replace(m, payload=framed(m.payload, sid, tail)))
    out = batch_layout.with_payloads(entry.batch, entry.count, lambda p: framed(p, sid, tail))
    return entry if out is None else replace(entry, batch=out)
