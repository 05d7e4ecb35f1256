"""Confluent's framing at the edge (kop.entries.framing): a value framed with an id that
is a version of the topic's schema is stored bare in an entry naming that version, and
an entry naming a version reads back framed with its id, in both layouts, every other
value untouched."""

from __future__ import annotations

import pytest

from kop.entries import codec, framing
from kop.entries.formats import EntryFormat
from kop.protocol.records import Record, build_batch, iter_records, read_header
from kop.storage.types import Position, stored_as

VERSIONS = {7: 0, 9: 1}  # Confluent id -> Pulsar version


def framed(sid: int, body: bytes) -> bytes:
    return framing.framed(body, sid)


def records(*values: bytes | None) -> list[Record]:
    return [Record(i, 1_700_000_000_000 + i, f"k{i}".encode(), v) for i, v in enumerate(values)]


def round_trip(values: list[bytes | None], *, batching: bool, pid: int = -1) -> list[bytes | None]:
    """Produced through the codec with framing, stored, read back reframed."""
    extra = {} if pid < 0 else {"producer_id": pid, "producer_epoch": 0, "base_sequence": 0}
    batch = build_batch(records(*values), **extra)
    head = read_header(batch)
    out = codec.encode(head, batch, EntryFormat.PULSAR, batching, 0, 1 << 20,
                       versions=VERSIONS)  # fmt: skip
    back: list[bytes | None] = []
    offset = 0
    for i, entry in enumerate(out):
        stored = stored_as(entry, Position(1, i), "p", i, 0)
        if stored.schema_version is not None:
            version = framing.version_of(stored.schema_version)
            sid = {v: k for k, v in VERSIONS.items()}[version]
            stored = framing.reframed(stored, sid)
        decoded = codec.decode(stored, offset)
        offset += decoded.count
        back += [r.value for r in iter_records(decoded.data)]
    return back


@pytest.mark.parametrize("batching", [True, False])
def test_a_batch_of_mixed_values_reads_back_as_it_was_written(batching: bool) -> None:
    values = [framed(7, b"a"), framed(7, b"b"), framed(9, b"c"), b"plain", None,
              framed(8, b"unknown id"), b"\x00\x00", framed(7, b"d")]  # fmt: skip
    assert round_trip(values, batching=batching) == values
    assert round_trip(values, batching=batching, pid=5) == values


def test_each_entry_holds_one_version_and_bare_values() -> None:
    values = [framed(7, b"a"), framed(7, b"b"), framed(9, b"c"), b"plain"]
    batch = build_batch(records(*values))
    out = codec.encode(read_header(batch), batch, EntryFormat.PULSAR, True, 0, 1 << 20,
                       versions=VERSIONS)  # fmt: skip
    assert [(e.count, e.schema_version) for e in out] == [
        (2, framing.version_bytes(0)), (1, framing.version_bytes(1)), (1, None),
    ]  # fmt: skip
    stored = stored_as(out[0], Position(1, 0), "p", 0, 0)
    from kop.storage import batch_layout

    assert [m.payload for m in batch_layout.messages(stored)] == [b"a", b"b"]


def test_without_versions_nothing_changes() -> None:
    values = [framed(7, b"a"), b"plain"]
    batch = build_batch(records(*values))
    head = read_header(batch)
    plain = codec.encode(head, batch, EntryFormat.PULSAR, True, 0, 1 << 20)
    none_known = codec.encode(head, batch, EntryFormat.PULSAR, True, 0, 1 << 20,
                              versions={})  # fmt: skip
    assert plain == none_known
    assert all(e.schema_version is None for e in plain)


def test_versions_are_eight_bytes_big_endian() -> None:
    assert framing.version_bytes(1) == b"\x00" * 7 + b"\x01"
    assert framing.version_of(framing.version_bytes(123456789)) == 123456789
    assert framing.version_of(b"\x01") is None
    assert framing.schema_id(b"\x00\x00\x00\x01\x00") == 256
    assert framing.schema_id(b"\x01\x00\x00\x00\x01") is None
    assert framing.schema_id(b"\x00\x00\x00\x01") is None


PROTO = framing.IdVersions({7: 0, 9: 1}, tails={9: b"\x00"})  # id 9: a Protobuf version


@pytest.mark.parametrize("batching", [True, False])
def test_a_protobuf_value_is_stored_bare_only_with_its_roots_message_indexes(
    batching: bool,
) -> None:
    """Id 9's values carry message indexes after the id: [0] (its root) is taken off with
    the framing, others ([1]: b"\\x02\\x02", or none at all) keep theirs. The native kernel
    knows only five bytes, so such a map takes the Python path, in either layout."""
    root, other, short = framed(9, b"\x00pb"), framed(9, b"\x02\x02pb"), framed(9, b"")
    values = [framed(7, b"avro"), root, other, short, root]
    batch = build_batch(records(*values))
    out = codec.encode(read_header(batch), batch, EntryFormat.PULSAR, batching, 0, 1 << 20,
                       versions=PROTO)  # fmt: skip
    stored = [stored_as(e, Position(1, i), "p", i, 0) for i, e in enumerate(out)]
    from kop.storage import batch_layout

    view = [(s.schema_version, m.payload) for s in stored for m in batch_layout.messages(s)]
    v0, v1 = framing.version_bytes(0), framing.version_bytes(1)
    assert view == [(v0, b"avro"), (v1, b"pb"), (None, other), (None, short), (v1, b"pb")]
    back = [framing.reframed(s, 9, b"\x00") if s.schema_version == v1 else s for s in stored]
    assert [m.payload for s in back for m in batch_layout.messages(s)][1] == root
