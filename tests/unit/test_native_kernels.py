"""The native kernels (`kop_native`, built from native/ by `make setup`) against
their Python twins in `kop.entries.codec`, which are the spec: for any Kafka
records, the same batch layouts byte for byte; for any batch entry, malformed
ones included, the same records, max timestamp, Kafka batches byte for byte,
stamps and anomalies. Then each rule on its own (base64, int(), the header JSON)
against the Python function it stands for, and the pure-Python path, which runs
whenever the extension is not built or KOP_NATIVE=0."""

from __future__ import annotations

import base64
import itertools
import json
import os
import struct
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

import crc32c
import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from kop.entries import codec as entries
from kop.entries import formats as entry_format
from kop.entries.codec import MAX_NULL_RECORDS
from kop.entries.formats import P_ENTRY, P_HEADERS, P_KEY, P_PRODUCER, P_TS, ProducerStamp
from kop.entries.framing import IdVersions
from kop.protocol.errors import KafkaError
from kop.protocol.records import (
    HEADER_SIZE,
    Record,
    build_batch,
    iter_batches,
    read_header,
    records_section,
)
from kop.storage import batch_layout
from kop.storage.proto.batch_layout_pb2 import SingleMessageMetadata
from kop.storage.types import OutgoingMessage, Position, StoredEntry, stored_as
from tests.unit.batch_samples import BATCH, MALFORMED_HEADERS, batch_payloads

kop_native: ModuleType | None
try:
    import kop_native
except ImportError:
    kop_native = None

needs_native = pytest.mark.skipif(
    kop_native is None,
    reason="kop_native is not importable (not built: `make setup` builds it when cargo is "
    "on PATH); kop runs the pure-Python kernels",
)

# KOP_NATIVE_FUZZ=N runs N times as many examples: a soak of the equivalence.
FUZZ = int(os.environ.get("KOP_NATIVE_FUZZ", "1"))


def examples(n: int) -> settings:
    return settings(
        max_examples=n * FUZZ, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


PUBLISH = 1_700_000_000_000
AT = Position(1, 1)
CODECS = [0, 1, 2, 3, 4]  # none, gzip, snappy, lz4, zstd


def _native() -> Any:
    assert kop_native is not None
    return kop_native


# -- records -> batch layouts ------------------------------------------------------

names = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["a", "b", "z", "__kafka.x", P_HEADERS, P_KEY, "é", "\U0001f600", '"\\\n']),
)
texts = st.text(max_size=8).map(str.encode)
keys = st.one_of(st.none(), st.just(b""), texts, st.binary(min_size=1, max_size=16))
header_values = st.one_of(st.none(), texts, st.binary(max_size=8))
timestamps = st.one_of(
    st.integers(-1, 0),
    st.integers(1, 2**43),
    st.sampled_from([-(2**63), -2, 2**63 - 1]),
)
records = st.builds(
    Record,
    offset=st.just(0),
    timestamp=timestamps,
    key=keys,
    value=st.one_of(st.none(), st.binary(max_size=64), st.binary(min_size=500, max_size=2000)),
    headers=st.lists(st.tuples(names, header_values), max_size=4).map(tuple),
)
max_bytes = st.one_of(st.integers(0, 64), st.integers(64, 4096), st.just(1 << 30))


def _batch(recs: list[Record], compression: int = 0) -> bytes:
    """What a producer sends (offsets from 0)."""
    numbered = [Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(recs)]
    try:
        return build_batch(numbered, compression=compression)
    except OverflowError:  # a first timestamp of -1 and a later one at 2**63 - 1
        assume(False)
        raise


def _python_layouts(
    batch: bytes, first_index: int, limit: int, extra: tuple[str, str] | None = None
) -> list[tuple[bytes, int]] | None:
    """The twin as `pulsar_entries` runs it; None where iter_records refuses the batch."""
    try:
        recs = entries.producer_records(batch, read_header(batch))
    except KafkaError:
        return None
    return entries.layouts(recs[first_index:], limit, dict([extra]) if extra else None)


def _native_layouts(
    section: bytes, count: int, base_ts: int, first_index: int, limit: int,
    extra: tuple[str, str] | None = None,
) -> list[tuple[bytes, int]] | None:  # fmt: skip
    try:
        out: list[tuple[bytes, int]] = _native().records_to_layouts(
            section, count, base_ts, first_index, limit, extra
        )
    except ValueError:
        return None
    return out


@needs_native
@examples(300)
@given(
    recs=st.lists(records, min_size=1, max_size=8),
    first_index=st.integers(-2, 9),
    limit=max_bytes,
    compression=st.sampled_from(CODECS),
    extra=st.sampled_from([None, ("__kafka.txn", "7"), ("__kafka.txn", "9223372036854775807")]),
)
def test_layouts_are_the_python_layouts(
    recs: list[Record], first_index: int, limit: int, compression: int,
    extra: tuple[str, str] | None,
) -> None:  # fmt: skip
    """Byte for byte, also with a property every record gets (a transaction's
    `__kafka.txn`)."""
    batch = _batch(recs, compression)
    head = read_header(batch)
    section = records_section(batch, head)
    got = _native_layouts(
        section, head.record_count, head.base_timestamp, first_index, limit, extra
    )
    assert got is not None
    assert got == _python_layouts(batch, first_index, limit, extra)


# values in Confluent's framing (magic 0, a 4-byte id), some of ids the topic has
framed_values = st.one_of(
    st.none(),
    st.binary(max_size=12),
    st.builds(lambda sid, body: b"\x00" + sid.to_bytes(4, "big") + body,
              st.sampled_from([1, 2, 3, 2**32 - 1]), st.binary(max_size=12)),
    # a Protobuf value: the id, message indexes (the root's [0], or [1]), the payload
    st.builds(lambda sid, tail, body: b"\x00" + sid.to_bytes(4, "big") + tail + body,
              st.sampled_from([1, 2, 3]), st.sampled_from([b"\x00", b"\x02\x02"]),
              st.binary(max_size=8)),
)  # fmt: skip


@needs_native
@examples(300)
@given(
    recs=st.lists(
        st.builds(Record, st.just(0), st.integers(1, 2**40), st.none(), framed_values),
        min_size=1,
        max_size=10,
    ),
    first_index=st.integers(-2, 11),
    limit=max_bytes,
    versions=st.dictionaries(st.sampled_from([1, 2, 3]), st.integers(0, 5)),
    extra=st.sampled_from([None, ("__kafka.txn", "7")]),
    tails=st.dictionaries(st.sampled_from([1, 2, 3]), st.sampled_from([b"\x00", b"\x02\x02"])),
)
def test_framed_layouts_are_the_python_framed_layouts(
    recs: list[Record], first_index: int, limit: int, versions: dict[int, int],
    extra: tuple[str, str] | None, tails: dict[int, bytes],
) -> None:  # fmt: skip
    """Byte for byte, with the same runs of versions and the same unknown ids
    (kop.entries.framing); a Protobuf root's message indexes (`tails`) come off with the
    id, and a value of another message of the file keeps its framing."""
    batch = _batch(recs)
    head = read_header(batch)
    section = records_section(batch, head)
    got = _native().records_to_framed_layouts(
        section, head.record_count, head.base_timestamp, first_index, limit, extra, versions,
        tails,
    )  # fmt: skip
    own = entries.producer_records(batch, head)[first_index:]
    known = IdVersions(versions, tails)
    want = entries.framed_layouts(own, limit, dict([extra]) if extra else None, known)
    assert (list(got[0]), list(got[1])) == (want[0], want[1])


def _with_section(batch: bytes, section: bytes, count: int) -> bytes:
    """`batch`'s header (uncompressed, CreateTime) over another records section."""
    head = bytearray(batch[:HEADER_SIZE])
    head[21:23] = b"\x00\x00"
    head[57:61] = struct.pack(">i", count)
    return bytes(head) + section


@needs_native
@examples(400)
@given(
    recs=st.lists(records, min_size=1, max_size=4),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=3),
    cut=st.one_of(st.none(), st.integers(0, 10_000)),
    tail=st.binary(max_size=3),
    count_delta=st.sampled_from([0, 0, 0, -1, 1, -100]),
)
def test_corrupt_records_are_refused_alike(
    recs: list[Record],
    edits: list[tuple[int, int]],
    cut: int | None,
    tail: bytes,
    count_delta: int,
) -> None:
    """Truncated, edited, padded sections and wrong counts: the kernel refuses
    (ValueError) exactly what aiokafka's reader refuses, and agrees on the rest."""
    batch = _batch(recs)
    head = read_header(batch)
    data = bytearray(records_section(batch, head))
    for at, byte in edits:
        if data:
            data[at % len(data)] = byte
    if cut is not None:
        del data[cut % (len(data) + 1) :]
    section = bytes(data) + tail
    count = head.record_count + count_delta
    got = _native_layouts(section, count, head.base_timestamp, 0, 1 << 20)
    assert got == _python_layouts(_with_section(batch, section, count), 0, 1 << 20)


@needs_native
@examples(300)
@given(section=st.binary(max_size=64), count=st.integers(-1, 4))
def test_garbage_records_are_refused_alike(section: bytes, count: int) -> None:
    batch = _batch([Record(0, 5, None, None)])
    got = _native_layouts(section, count, 5, 0, 1 << 20)
    assert got == _python_layouts(_with_section(batch, section, count), 0, 1 << 20)


def _varint(value: int, extra: int = 0) -> bytes:
    """Zigzag (Kafka) varint of `value`, padded with `extra` redundant bytes."""
    v = ((value << 1) ^ (value >> 63)) & (2**64 - 1)
    return _uvarint(v, extra)


def _uvarint(v: int, extra: int = 0) -> bytes:
    out = bytearray()
    while True:
        out.append(v & 0x7F)
        v >>= 7
        if not v:
            break
        out[-1] |= 0x80
    for _ in range(extra):
        out[-1] |= 0x80
        out.append(0)
    return bytes(out)


def _record(body: bytes, length_delta: int = 0) -> bytes:
    return _varint(len(body) + length_delta) + body


NULLS = b"\x01\x01"  # null key, null value


@needs_native
@pytest.mark.parametrize(
    ("section", "accepted"),
    [
        (_record(b"\x00\x00\x00" + NULLS + b"\x00"), True),
        # attributes are a varint in aiokafka's reader: 0x80 0x00 is one attribute
        (_record(b"\x80\x00\x00\x00" + NULLS + b"\x00"), True),
        # a 10-byte varint (timestamp delta) whose last byte has high bits
        (_record(b"\x00" + b"\xff" * 9 + b"\x7f\x00" + NULLS + b"\x00"), True),
        # an 11-byte varint
        (_record(b"\x00" + b"\xff" * 10 + b"\x01\x00" + NULLS + b"\x00"), False),
        # key length -5 means null, like -1
        (_record(b"\x00\x00\x00" + _varint(-5) + b"\x01\x00"), True),
        # a header key that is not UTF-8
        (_record(b"\x00\x00\x00" + NULLS + b"\x02\x02\xff\x01"), False),
        (_record(b"\x00\x00\x00" + NULLS + b"\x02\x02a\x01"), True),
        # a negative header key length; a negative header count
        (_record(b"\x00\x00\x00" + NULLS + b"\x02\x01\x01"), False),
        (_record(b"\x00\x00\x00" + NULLS + b"\x01"), False),
        # a record length one too many, one too few
        (_record(b"\x00\x00\x00" + NULLS + b"\x00", 1), False),
        (_record(b"\x00\x00\x00" + NULLS + b"\x00", -1), False),
        # a header value length past the end
        (_record(b"\x00\x00\x00" + NULLS + b"\x02\x02a\x80"), False),
    ],
)
def test_edge_records_match_aiokafka(section: bytes, accepted: bool) -> None:
    batch = _batch([Record(0, 5, None, None)])
    got = _native_layouts(section, 1, 5, 0, 1 << 20)
    assert got == _python_layouts(_with_section(batch, section, 1), 0, 1 << 20)
    assert (got is not None) == accepted


# -- batch layouts -> Kafka batches ------------------------------------------------

WELL_FORMED = {
    P_ENTRY: ["batch"],
    P_KEY: ["b64", "empty"],
    P_HEADERS: ['[["a", "YQ=="], ["b", null]]', "[]", '[["\\ud83d\\ude00", "QUJD="]]'],
    P_TS: ["-1", "0", "12", " 7 ", "1_000", "\u0663", str(2**63 - 1), str(-(2**63))],
    P_PRODUCER: ["1/0/5/3/2", "1/0/5/3", "1/0/5/3/0", "2/0/0/1"],
}
MALFORMED = {
    P_ENTRY: ["zip", ""],
    P_KEY: ["hex", ""],
    P_HEADERS: [*MALFORMED_HEADERS, '[["a", "\\u00e9"]]', '[["a", null],]', "[" * 1000],
    P_TS: ["abc", "", "1.5", str(2**63), "1__0", "\x1c1"],
    P_PRODUCER: ["", "x", "1/2/3", "1/0/5/3/0/9", "1/0/5/3/3", "-1/0/5/3/0", f"1/{2**15}/5/3/0"],
}


payloads = st.one_of(st.none(), st.binary(max_size=40), batch_payloads)
messages = st.builds(
    OutgoingMessage,
    payload=payloads,
    properties=st.builds(
        lambda plain, reserved: {**plain, **reserved},
        st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
        st.fixed_dictionaries(
            {},
            optional={
                name: st.one_of(
                    st.text(max_size=12), st.sampled_from(WELL_FORMED[name] + MALFORMED[name])
                )
                for name in WELL_FORMED
            },
        ),
    ),
    partition_key=st.one_of(
        st.none(),
        st.just(""),
        st.text(max_size=8),
        st.binary(min_size=1, max_size=8).map(lambda b: base64.b64encode(b).decode()),
        st.sampled_from(["QQ", "QUJD=", "QR==", "Q===", "=QQ"]),
    ),
    event_time=st.one_of(st.none(), st.integers(1, 2**64 - 1), st.sampled_from([2**63 - 1, 2**63])),
    key_b64=st.booleans(),
)
# what kop writes: encoded records, stamped or not
kop_messages = st.builds(
    entry_format.encode_record,
    records,
    st.one_of(st.none(), st.sampled_from(["7/0/10/3/0", "7/0/10/3/1", "7/0/10/3/2", "8/1/0/2"])),
)
publish_times = st.one_of(st.just(PUBLISH), st.integers(-2, 2**45), st.just(-1))
base_offsets = st.one_of(st.just(0), st.integers(0, 2**40))


def _raw_strings_utf8(layout: bytes, count: int) -> bool:
    """Whether every string field of every parsed metadata is UTF-8 (as
    `batch_layout.messages` walks the layout)."""
    pos = 0
    for _ in range(count):
        if pos + 4 > len(layout):
            return True
        (size,) = struct.unpack_from(">I", layout, pos)
        pos += 4
        meta = SingleMessageMetadata()
        try:
            meta.ParseFromString(layout[pos : pos + size])
        except DecodeError:
            return True
        strings = [meta.partition_key]
        strings += [s for kv in meta.properties for s in (kv.key, kv.value)]
        if not all(isinstance(s, str) for s in strings):
            return False
        pos += size + max(meta.payload_size, 0)
    return True


def _unparseable(count: int, base: int, publish: int) -> tuple[Any, ...]:
    """Null records for the first MAX_NULL_RECORDS offsets, a batch spanning all."""
    n = max(1, count)
    nulls = [Record(base + i, publish, None, None) for i in range(min(n, MAX_NULL_RECORDS))]
    batch = bytearray(build_batch(nulls))
    struct.pack_into(">i", batch, 23, n - 1)  # last offset delta
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return (n, publish, bytes(batch), [], ["batch"])


def _check_decode(layout: bytes, count: int, base: int = 0, publish: int = PUBLISH) -> Any:
    got = _native().decode_layout(layout, count, base, publish)
    if not _raw_strings_utf8(layout, count):
        # Python's protobuf hands out bytes for such a string and the twin then
        # raises (or ignores it); the kernel calls the layout unparseable.
        assert got == _unparseable(count, base, publish)
        return got
    entry = StoredEntry(AT, "p", 0, publish, count, None, layout)
    try:
        n, max_ts, data, stamps, bad = entries.decode_layout(entry, base)
    except OverflowError:
        # build_batch's Python builder (first timestamp -1) raises for a later
        # record at 2**63 - 1; the kernel wraps the delta, which reads back right
        assert max(r.timestamp for r in iter_batches(got[2])) == 2**63 - 1
        return got
    assert (got[0], got[1]) == (n, max_ts)
    assert got[2] == data
    assert got[3] == [
        (s.producer_id, s.epoch, s.first_seq, s.count, s.index, at) for s, at in stamps
    ]
    assert sorted(set(got[4])) == sorted(set(bad))
    return got


@needs_native
@examples(400)
@given(
    msgs=st.lists(st.one_of(messages, kop_messages), min_size=1, max_size=5),
    count_delta=st.sampled_from([0, 0, 0, 0, -1, 1, -10]),
    base=base_offsets,
    publish=publish_times,
)
def test_decode_is_the_python_decode(
    msgs: list[OutgoingMessage], count_delta: int, base: int, publish: int
) -> None:
    _check_decode(batch_layout.build(msgs), len(msgs) + count_delta, base, publish)


@needs_native
@examples(300)
@given(
    msgs=st.lists(st.one_of(messages, kop_messages), min_size=1, max_size=3),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=3),
    cut=st.one_of(st.none(), st.integers(0, 10_000)),
    tail=st.binary(max_size=4),
)
def test_corrupt_layouts_decode_alike(
    msgs: list[OutgoingMessage], edits: list[tuple[int, int]], cut: int | None, tail: bytes
) -> None:
    data = bytearray(batch_layout.build(msgs))
    for at, byte in edits:
        data[at % len(data)] = byte
    if cut is not None:
        del data[cut % (len(data) + 1) :]
    _check_decode(bytes(data) + tail, len(msgs))


@needs_native
@examples(200)
@given(layout=st.binary(max_size=80), count=st.integers(-1, 4))
def test_garbage_layouts_decode_alike(layout: bytes, count: int) -> None:
    _check_decode(layout, count)


@needs_native
@pytest.mark.parametrize("count", [-1, 0, 1, 63, 64, 4096, 4097, 8193, 2**31 - 1])
def test_unparseable_entries_are_null_records(count: int) -> None:
    """Offset deltas cross the varint sizes; a count <= 0 still takes one offset; past
    MAX_NULL_RECORDS the rest of the offsets are a gap in the one batch served."""
    got = _check_decode(b"\x00\x00\x00", count, base=5, publish=-1)
    assert got[0] == max(1, count) and got[4] == ["batch"]
    [head] = [read_header(got[2])]
    assert head.record_count == min(max(1, count), MAX_NULL_RECORDS)
    assert head.last_offset_delta == max(1, count) - 1


# Hand-made metadata: every wire type, tag and length shape upb meets.


@st.composite
def pb_fields(draw: st.DrawFn, depth: int = 0, in_kv: bool = False) -> bytes:
    out = bytearray()
    for _ in range(draw(st.integers(0, 5 if depth == 0 else 3))):
        field = draw(st.sampled_from([1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 2**29 - 1]))
        wire = draw(st.sampled_from([0, 0, 0, 2, 2, 2, 1, 5, 3, 4, 6]))
        tag_extra = draw(st.sampled_from([0, 0, 0, 0, 1, 3, 4, 5]))
        out += _uvarint(field << 3 | wire, tag_extra)
        if wire == 0:
            value = draw(
                st.one_of(st.integers(0, 300), st.integers(0, 2**64 - 1), st.just(2**64 - 1))
            )
            out += _uvarint(value, draw(st.sampled_from([0, 0, 0, 1, 9, 10])))
        elif wire in (1, 5):
            out += draw(st.binary(min_size=0, max_size=9))
        elif wire == 2:
            if field == 1 and not in_kv and depth < 3 and draw(st.booleans()):
                content = draw(pb_fields(depth + 1, in_kv=True))
            else:
                content = draw(
                    st.one_of(
                        st.text(max_size=6).map(str.encode),
                        st.binary(max_size=6),
                        st.sampled_from([b"\xed\xa0\x80", b"\xc0\x80", b"batch", b"b64"]),
                    )
                )
            size = max(0, len(content) + draw(st.sampled_from([0, 0, 0, 0, -1, 1, 50])))
            out += _uvarint(size, draw(st.sampled_from([0, 0, 0, 1, 4, 5]))) + content
        elif wire == 3:
            if depth < 4:
                out += draw(pb_fields(depth + 1, in_kv=in_kv))
            end = draw(st.sampled_from([field, field, field + 1, 0]))
            if draw(st.integers(0, 9)):
                out += _uvarint(end << 3 | 4)
    return bytes(out)


def _nested_groups(n: int, field: int = 12) -> bytes:
    return _uvarint(field << 3 | 3) * n + _uvarint(field << 3 | 4) * n


@needs_native
@examples(600)
@given(metas=st.lists(pb_fields(), min_size=1, max_size=3), payload=st.binary(max_size=6))
@example(metas=[_nested_groups(100)], payload=b"")
@example(metas=[_nested_groups(101)], payload=b"")
@example(metas=[b"\x0a" + _uvarint(len(_nested_groups(99))) + _nested_groups(99)], payload=b"")
@example(metas=[b"\x0a" + _uvarint(len(_nested_groups(100))) + _nested_groups(100)], payload=b"")
@example(metas=[bytes.fromhex("0b0d88808080000c")], payload=b"")  # field 0 in an unknown group
@example(metas=[bytes.fromhex("5b03045c")], payload=b"")  # a group 0 in an unknown group
@example(metas=[bytes.fromhex("5b045c")], payload=b"")  # ... but not closing another
@example(metas=[bytes.fromhex("0001")], payload=b"")  # field 0 elsewhere
@example(metas=[b"\x12\x01\xff"], payload=b"")  # a partition key that is not UTF-8
@example(metas=[b"\x0a\x05\x0a\x01\xff\x12\x00"], payload=b"")  # nor a property name
def test_any_metadata_parses_as_upb_parses_it(metas: list[bytes], payload: bytes) -> None:
    layout = b"".join(struct.pack(">I", len(m)) + m + payload for m in metas)
    _check_decode(layout, len(metas))


@needs_native
def test_kafka_format_messages_in_a_batch_entry() -> None:
    """A batch entry may hold whole Kafka batches (`__kafka.entry=batch`) between
    plain messages: they are served re-based, the plain ones built around them."""
    plain = OutgoingMessage(b"p", {"h": "1"}, "key", 42)
    kafka = OutgoingMessage(BATCH, {P_ENTRY: "batch"}, None, None)
    first, again, other = (
        entry_format.encode_record(Record(0, 7, None, b"s"), stamp)
        for stamp in ("5/0/0/3/0", "5/0/0/3/1", "6/0/0/2/1")
    )
    layout = batch_layout.build([plain, kafka, first, kafka, again, other])
    got = _check_decode(layout, 6, base=1000)
    assert got[0] == 1 + 2 + 1 + 2 + 1 + 1
    assert [r.offset for r in iter_batches(got[2])] == list(range(1000, 1008))
    # of consecutive stamps of one batch, the last counts
    assert got[3] == [(5, 0, 0, 3, 1, 1006), (6, 0, 0, 2, 1, 1007)]


# -- round trips --------------------------------------------------------------------

roundtrip_records = st.builds(
    Record,
    offset=st.just(0),
    timestamp=timestamps,
    key=keys,
    value=st.one_of(st.none(), st.binary(max_size=64)),
    headers=st.lists(st.tuples(names, header_values), max_size=4).map(tuple),
)


def _native_roundtrip(recs: list[Record], limit: int, base: int) -> list[Record]:
    batch = _batch(recs)
    head = read_header(batch)
    section = records_section(batch, head)
    layouts = _native().records_to_layouts(
        section, head.record_count, head.base_timestamp, 0, limit
    )
    assert sum(n for _, n in layouts) == len(recs)
    data = b""
    offset = base
    for layout, n in layouts:
        count, _, batches, stamps, bad = _native().decode_layout(layout, n, offset, PUBLISH)
        assert count == n and stamps == [] and bad == []
        data += batches
        offset += n
    return list(iter_batches(data))


@needs_native
@examples(200)
@given(
    recs=st.lists(roundtrip_records, min_size=1, max_size=10),
    limit=max_bytes,
    base=base_offsets,
)
def test_records_roundtrip_through_the_native_kernels(
    recs: list[Record], limit: int, base: int
) -> None:
    back = _native_roundtrip(recs, limit, base)
    assert back == [
        Record(base + i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(recs)
    ]


@needs_native
def test_a_first_timestamp_of_minus_one_is_kept() -> None:
    """build_batch does not let aiokafka's C builder take -1 for "no first
    timestamp yet" (it would serve the earlier records at a later one's)."""
    layout = batch_layout.build(
        [entry_format.encode_record(Record(0, ts, None, b"v")) for ts in (-1, 5, -1, 3)]
    )
    got = _check_decode(layout, 4)
    assert [r.timestamp for r in iter_batches(got[2])] == [-1, 5, -1, 3]


@needs_native
def test_a_delta_beyond_int64_wraps() -> None:
    """First -1, then 2**63 - 1: the twin raises OverflowError (aiokafka's Python
    builder); the kernel writes the wrapped delta, as aiokafka's C builder would."""
    msgs = [
        entry_format.encode_record(Record(0, -1, None, b"a")),
        OutgoingMessage(b"b", {}, None, 2**63 - 1),
    ]
    got = _check_decode(batch_layout.build(msgs), 2)
    assert [r.timestamp for r in iter_batches(got[2])] == [-1, 2**63 - 1]


@needs_native
def test_log_append_time_batches_agree() -> None:
    """A producer's batch claiming LogAppendTime: both read each record's own time
    (base + delta), as Kafka keeps it on a CreateTime topic, not the max timestamp."""
    batch = bytearray(_batch([Record(0, 10, None, b"a"), Record(1, 20, None, b"b")]))
    batch[22] |= 0x08  # timestamp type: LogAppendTime
    batch[35:43] = struct.pack(">q", 99)
    head = read_header(bytes(batch))
    got = _native_layouts(
        records_section(bytes(batch), head), head.record_count, head.base_timestamp, 0, 1 << 20
    )
    assert got == _python_layouts(bytes(batch), 0, 1 << 20)
    ((layout, count),) = got
    decoded = _check_decode(layout, count)
    assert [r.timestamp for r in iter_batches(decoded[2])] == [10, 20]


@needs_native
def test_large_entries_from_threads() -> None:
    """Large inputs run with the GIL released (and take it back for what only
    Python's int() reads); several threads at once get what the twins give."""
    recs = [
        Record(i, PUBLISH + i, b"k%d" % i, bytes(300), (("h", b"\xff"), ("a", b"1")))
        for i in range(400)
    ]
    batch = _batch(recs)
    head = read_header(batch)
    section = records_section(batch, head)
    assert len(section) > 64 * 1024
    want = _python_layouts(batch, 3, 50_000)
    assert want is not None and len(want) > 1
    unicode_ts = entry_format.encode_record(Record(0, 5, None, b"x"))
    unicode_ts.properties[P_TS] = "\u0663\u0663"  # int() reads 33
    layout = batch_layout.build([*(entry_format.encode_record(r) for r in recs), unicode_ts])
    entry = StoredEntry(AT, "p", 0, PUBLISH, len(recs) + 1, None, layout)
    n, max_ts, data, _, _ = entries.decode_layout(entry, 7)

    def work() -> None:
        for _ in range(5):
            got = _native_layouts(section, head.record_count, head.base_timestamp, 3, 50_000)
            assert got == want
            assert _native().decode_layout(layout, len(recs) + 1, 7, PUBLISH)[:3] == (
                n,
                max_ts,
                data,
            )

    with ThreadPoolExecutor(4) as pool:
        for future in [pool.submit(work) for _ in range(4)]:
            future.result()
    assert list(iter_batches(data))[-1].timestamp == 33


# -- the rules one by one -----------------------------------------------------------


def _py_b64(data: bytes) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        return None


@needs_native
def test_base64_is_binascii_strict_mode_exhaustively() -> None:
    """Every string of up to 5 characters over a telling alphabet."""
    alphabet = b"QR/=+\n "
    for n in range(6):
        for chars in itertools.product(alphabet, repeat=n):
            data = bytes(chars)
            assert _native()._b64decode(data) == _py_b64(data), data


@needs_native
@examples(300)
@given(data=st.one_of(st.binary(max_size=12), st.binary(max_size=9).map(base64.b64encode)))
def test_base64_decodes_as_python(data: bytes) -> None:
    assert _native()._b64decode(data) == _py_b64(data)


def _py_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


int_texts = st.text(
    alphabet=st.sampled_from(
        list("0123456789_+- \t\n\x0b\x0c\r\x1c\x1f\x00a.x\u0663\uff11\u3000\x85")
    ),
    max_size=10,
)


@needs_native
@examples(500)
@given(text=int_texts)
@example(text="0" * 640 + "1")
@example(text="0" * 4300 + "1")
@example(text="1" * 30)
def test_int_is_python_int(text: str) -> None:
    assert _native()._int(text) == _py_int(text)


@needs_native
def test_int_whitespace_is_python_int() -> None:
    for c in map(chr, range(128)):
        for text in (c + "12", "12" + c, "1" + c + "2", c):
            assert _native()._int(text) == _py_int(text), repr(text)


@st.composite
def header_json(draw: st.DrawFn) -> str:
    """Header lists as kop writes them, then perhaps bent."""
    headers = draw(st.lists(st.tuples(st.text(max_size=4), header_values), max_size=3))
    text = json.dumps(
        [[k, None if v is None else base64.b64encode(v).decode()] for k, v in headers],
        ensure_ascii=draw(st.booleans()),
        separators=draw(st.sampled_from([(", ", ": "), (",", ":"), (" ,\n", ":")])),
    )
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        piece = draw(
            st.sampled_from(
                [
                    "",
                    "[",
                    "]",
                    ",",
                    '"',
                    "\\",
                    "\\u",
                    "\\ud800",
                    "\\udc00",
                    "null",
                    "1",
                    " ",
                    "\x01",
                ]
            )
        )
        cut = draw(st.integers(0, 2))
        text = text[:at] + piece + text[at + cut :]
    return text


@needs_native
@examples(500)
@given(text=st.one_of(header_json(), st.text(max_size=12)))
@example(text='[["\\ud83d\\ude00", null]]')
@example(text='[["\\ud83d\\u0041", null]]')
@example(text='[["\\ud83d\\uzzzz", null]]')
@example(text='[["\\udc00", null]]')
@example(text='\ufeff[["a", null]]')
@example(text='[["a", NaN]]')
@example(text='[["a", null]] x')
@example(text='[["\\/\\b\\f\\n\\r\\t\\"\\\\", "\\u0051\\u0051=="]]')
def test_header_json_reads_as_python_reads_it(text: str) -> None:
    want = entry_format._json_headers(text)
    assert _native()._json_headers(text) == (None if want is None else list(want))


@needs_native
@examples(300)
@given(headers=st.lists(st.tuples(st.text(), header_values), min_size=1, max_size=4))
def test_header_json_is_written_as_json_dumps(
    headers: list[tuple[str, bytes | None]],
) -> None:
    want = json.dumps(
        [[k, None if v is None else base64.b64encode(v).decode()] for k, v in headers]
    )
    assert _native()._json_dumps(headers) == want


# -- the pure-Python path -------------------------------------------------------------


@pytest.fixture
def pure_python(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """KOP_NATIVE=0: the entries module runs its Python twins."""
    monkeypatch.setattr(entries, "native", lambda: None)
    yield


def _produce_fetch(
    recs: list[Record], stamp: ProducerStamp | None, limit: int
) -> list[entries.Entry]:
    batch = build_batch(recs)
    head = read_header(batch)
    out = entries.pulsar_entries(batch, head, stamp, 0, batching=True, max_entry_bytes=limit)
    decoded = []
    offset = 0
    for e in out:
        decoded.append(entries.decode(stored_as(e, AT, "p", 0, PUBLISH), offset))
        offset += decoded[-1].count
    return decoded


ROUND_TRIPS = [
    ([Record(0, 1000, b"k", b"v", (("h", b"x"),)), Record(1, 900, None, None)], None, 1 << 20),
    (
        [
            Record(i, 10 + i, b"\xff%d" % i, b"x" * 100, (("z", b"1"), ("a", None)))
            for i in range(20)
        ],
        ProducerStamp(7, 0, 100, 20),
        700,
    ),
    ([Record(i, -2, b"", b"", (("__kafka.key", b"\xfe"),)) for i in range(3)], None, 0),
]


@pytest.mark.parametrize(("recs", "stamp", "limit"), ROUND_TRIPS)
def test_pure_python_produce_fetch_roundtrips(
    pure_python: None, recs: list[Record], stamp: ProducerStamp | None, limit: int
) -> None:
    decoded = _produce_fetch(recs, stamp, limit)
    back = [r for e in decoded for r in iter_batches(e.data)]
    assert back == recs
    if stamp is not None:
        assert decoded[-1].stamps[-1] == (ProducerStamp(7, 0, 100, 20, 19), 19)


@needs_native
@pytest.mark.parametrize(("recs", "stamp", "limit"), ROUND_TRIPS)
def test_native_and_python_paths_give_the_same_entries(
    monkeypatch: pytest.MonkeyPatch, recs: list[Record], stamp: ProducerStamp | None, limit: int
) -> None:
    native = _produce_fetch(recs, stamp, limit)
    monkeypatch.setattr(entries, "native", lambda: None)
    assert _produce_fetch(recs, stamp, limit) == native
