"""Every decoder kop runs on bytes from outside, on arbitrary bytes and on valid
input whose lengths and counts were changed to huge, negative or off-by-one
values, either decodes or raises kop's own documented error: never another
exception, never a crash (an abort in native code), never memory sized from a
length it has not checked, never a long stall.

Each decoder runs in a child process (`fuzz.isolated.Isolated`, the targets
in `decoder_targets`) under an address-space limit and a per-input timeout, so
a crash or a hang fails the test and names its input. KOP_DECODER_FUZZ=N runs
N times as many examples.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import struct
import zlib
from collections.abc import Iterator

import cramjam
import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.isolated import Isolated
from kop.entries.formats import P_ENTRY, P_HEADERS, P_KEY, P_PRODUCER, P_TS
from kop.groups.offsets_codec import encode_group, encode_offset
from kop.groups.types import CommittedOffset, GroupMetadata, MemberMetadata, TopicPartition
from kop.protocol.records import HEADER_SIZE, Record, build_batch, uvarint
from kop.pulsar.wire.frames import encode_payload_command
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.storage import batch_layout
from kop.storage.proto.batch_layout_pb2 import SingleMessageMetadata
from kop.storage.types import OutgoingMessage
from tests.unit import decoder_targets
from tests.unit.decoder_targets import LIMIT, frame

FUZZ = int(os.environ.get("KOP_DECODER_FUZZ", "1"))
TARGETS = "tests.unit.decoder_targets"
KAFKA_ERROR = "kop.protocol.errors:KafkaError"
WIRE_ERROR = "kop.pulsar.wire.errors:PulsarWireError"


def examples(n: int) -> settings:
    return settings(
        max_examples=n * FUZZ,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def checker(target: str, *allowed: str, native: bool = True) -> Isolated:
    """A child for `decoder_targets.<target>`: 1 GiB of address space, 20 s an input;
    `native=False` runs the Python twins of kop_native."""
    env = {} if native else {"KOP_NATIVE": "0"}
    return Isolated(
        f"{TARGETS}:{target}", allowed=allowed, memory_bytes=1 << 30, timeout_s=20, env=env
    )


def isolated(target: str, *allowed: str, native: bool = True) -> Iterator[Isolated]:
    with checker(target, *allowed, native=native) as c:
        yield c


# Lengths and counts a hostile peer writes.
HOSTILE = [
    -1, -2, -5, -(2**15), -(2**31), -(2**63), 0, 1, 2, 7, 255, 256, 2**15 - 1, 2**16,
    2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**62, 2**63 - 1,
]  # fmt: skip
hostile = st.one_of(st.sampled_from(HOSTILE), st.integers(-(2**63), 2**63 - 1))


def _zigzag(v: int) -> int:
    return ((v << 1) ^ (v >> 63)) & (2**64 - 1)


# -- Kafka record batches in a Produce ---------------------------------------------

records = st.builds(
    Record,
    offset=st.just(0),
    timestamp=st.integers(0, 2**41),
    key=st.one_of(st.none(), st.binary(max_size=8)),
    value=st.one_of(st.none(), st.binary(max_size=40)),
    headers=st.lists(
        st.tuples(st.sampled_from(["h", "trace"]), st.one_of(st.none(), st.binary(max_size=6))),
        max_size=2,
    ).map(tuple),
)


def _compress(codec: int, section: bytes) -> bytes:
    if codec == 0:
        return section
    if codec == 1:
        return bytes(cramjam.gzip.compress(section))
    if codec == 2:
        return bytes(cramjam.snappy.compress_raw(section))
    if codec == 3:
        c = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        c.compress(section)
        return bytes(c.finish())
    return bytes(cramjam.zstd.compress(section))


def _varint_spans(section: bytes, count: int) -> list[tuple[int, int]]:
    """Where each length, count and delta of a valid records section is: (start, end)."""
    spans: list[tuple[int, int]] = []
    pos = 0

    def varint() -> int:
        nonlocal pos
        start, shift, value = pos, 0, 0
        while True:
            b = section[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        spans.append((start, pos))
        return (value >> 1) ^ -(value & 1)

    for _ in range(count):
        varint()  # length
        pos += 1  # attributes
        varint()  # timestamp delta
        varint()  # offset delta
        for _field in ("key", "value"):
            n = varint()
            pos += max(n, 0)
        for _ in range(varint()):  # headers
            n = varint()  # (not `pos += varint()`: that adds to pos as it was before)
            pos += n
            n = varint()
            pos += max(n, 0)
    return spans


def sealed(head: bytes, section: bytes, codec: int, count: int | None = None) -> bytes:
    """A batch around `section` (compressed with `codec`): lengths, record count and
    CRC made consistent, so that it passes split_batches' checks."""
    body = _compress(codec, section)
    batch = bytearray(head[:HEADER_SIZE]) + body
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    attrs = struct.unpack_from(">h", batch, 21)[0] & ~0x07 | codec
    struct.pack_into(">h", batch, 21, attrs)
    if count is not None:
        struct.pack_into(">i", batch, 23, count - 1)  # last offset delta
        struct.pack_into(">i", batch, 57, count)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


@st.composite
def mutated_batches(draw: st.DrawFn) -> bytes:
    """A valid batch, then one of its varints (a length, a count, a delta) or its
    record count replaced by a hostile value, re-compressed and re-sealed."""
    recs = draw(st.lists(records, min_size=1, max_size=6))
    codec = draw(st.sampled_from([0, 0, 1, 2, 3, 4]))
    numbered = [Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(recs)]
    plain = build_batch(numbered)
    section = plain[HEADER_SIZE:]
    spans = _varint_spans(section, len(recs))
    count = None
    how = draw(st.sampled_from(["varint", "varint", "count", "both"]))
    if how in ("varint", "both"):
        start, end = draw(st.sampled_from(spans))
        section = section[:start] + uvarint(_zigzag(draw(hostile))) + section[end:]
    if how in ("count", "both"):
        count = draw(st.one_of(st.sampled_from([2**31 - 1, 2**20, 0, -1]), st.integers(1, 99)))
    return sealed(plain, section, codec, count)


@functools.cache
def bombs() -> list[bytes]:
    """A batch of one record whose value of zeros compresses to under 1 MiB (the
    batch limit here), in every codec: 256 MiB for gzip and zstd, 128 MiB for lz4
    (at most 255:1), 16 MiB for snappy (about 21:1). Each is a valid batch."""
    sizes = {1: 256 << 20, 2: 16 << 20, 3: 128 << 20, 4: 256 << 20}
    return [
        build_batch([Record(0, 1, None, bytes(size))], compression=codec)
        for codec, size in sizes.items()
    ]


@pytest.fixture(scope="module", params=["native", "python"])
def produce_checkers(request: pytest.FixtureRequest) -> Iterator[list[Isolated]]:
    """The produce path into each entry format."""
    native = request.param == "native"
    targets = ("produce_kafka", "produce_pulsar", "produce_pulsar_unbatched")
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(checker(t, KAFKA_ERROR, native=native)) for t in targets]


def _produce_all(checkers: list[Isolated], data: bytes) -> list[str]:
    return [c.check(data) for c in checkers]


@examples(150)
@given(data=st.binary(max_size=200))
def test_produce_decodes_arbitrary_bytes_or_refuses_them(
    produce_checkers: list[Isolated], data: bytes
) -> None:
    _produce_all(produce_checkers, data)


@examples(300)
@given(batch=mutated_batches())
def test_produce_refuses_batches_with_hostile_lengths_and_counts(
    produce_checkers: list[Isolated], batch: bytes
) -> None:
    _produce_all(produce_checkers, batch)


def test_decompression_bombs_are_message_too_large(produce_checkers: list[Isolated]) -> None:
    """Up to 256 MiB of records in a batch under 1 MiB: refused within the bound
    (here 1 MiB) in every format, by a process that may not map more than 1 GiB.
    Before, each was inflated whole (and copied twice more)."""
    for bomb in bombs():
        assert len(bomb) < decoder_targets.MAX_BATCH
        for outcome in _produce_all(produce_checkers, bomb):
            assert outcome.startswith("KafkaError: record batch decompresses to more than")


@pytest.fixture(scope="module")
def kafka_codecs() -> Iterator[Isolated]:
    yield from isolated("kafka_decompress", "kop.protocol.compression:DecompressionFailed")


@examples(200)
@given(codec=st.sampled_from([1, 2, 3, 4]), data=st.binary(max_size=300))
def test_kafka_codecs_on_arbitrary_bytes(kafka_codecs: Isolated, codec: int, data: bytes) -> None:
    kafka_codecs.check(bytes([codec]) + data)


@examples(200)
@given(
    codec=st.sampled_from([1, 2, 3, 4]),
    payload=st.binary(max_size=2000),
    edits=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), max_size=3),
)
def test_kafka_codecs_on_damaged_streams(
    kafka_codecs: Isolated, codec: int, payload: bytes, edits: list[tuple[int, int]]
) -> None:
    stream = bytearray(_compress(codec, payload * 3))
    for at, byte in edits:
        stream[at % len(stream)] = byte
    kafka_codecs.check(bytes([codec]) + bytes(stream))


# -- Pulsar entries read back ------------------------------------------------------

props = st.dictionaries(
    st.one_of(st.sampled_from([P_ENTRY, P_HEADERS, P_KEY, P_PRODUCER, P_TS, "a"]), st.text()),
    st.one_of(
        st.sampled_from(["batch", "b64", "empty", "1/2/3/4/5", "[" * 3000, '[["a",null]]']),
        st.text(max_size=20),
    ),
    max_size=4,
)
messages = st.builds(
    OutgoingMessage,
    payload=st.one_of(
        st.none(), st.binary(max_size=30), st.just(build_batch([Record(0, 1, b"k", b"v")]))
    ),
    properties=props,
    partition_key=st.one_of(st.none(), st.text(max_size=8)),
    event_time=st.one_of(st.none(), st.integers(0, 2**63)),
    key_b64=st.booleans(),
)


@st.composite
def mutated_layouts(draw: st.DrawFn) -> bytes:
    """A valid batch layout, a size or payload_size in it replaced by a hostile
    value, with a count that may be anything a Pulsar producer can claim."""
    msgs = draw(st.lists(messages, min_size=1, max_size=4))
    data = bytearray(batch_layout.build(msgs))
    sizes, pos = [], 0
    for _ in msgs:
        sizes.append(pos)
        (n,) = struct.unpack_from(">I", data, pos)
        meta = SingleMessageMetadata.FromString(bytes(data[pos + 4 : pos + 4 + n]))
        pos += 4 + n + meta.payload_size
    if draw(st.booleans()):
        at = draw(st.sampled_from(sizes))
        struct.pack_into(">I", data, at, draw(hostile) & 0xFFFFFFFF)
    count = draw(st.one_of(st.just(len(msgs)), st.sampled_from([0, -1, 2**31 - 1, 2**20])))
    return struct.pack(">i", count) + bytes(data)


@pytest.fixture(scope="module", params=["native", "python"])
def read_back(request: pytest.FixtureRequest) -> Iterator[Isolated]:
    yield from isolated("read_batch_entry", native=request.param == "native")


@examples(200)
@given(data=st.binary(max_size=200))
def test_batch_entries_of_arbitrary_bytes_decode(read_back: Isolated, data: bytes) -> None:
    assert read_back.check(data) == "ok"


@examples(300)
@given(data=mutated_layouts())
def test_batch_entries_with_hostile_sizes_and_counts_decode(
    read_back: Isolated, data: bytes
) -> None:
    assert read_back.check(data) == "ok"


def test_an_entry_claiming_two_billion_messages_takes_their_offsets_in_bounded_memory(
    read_back: Isolated,
) -> None:
    """Ten bytes whose metadata claims 2^31 - 1 messages: before, kop built a record
    for each (tens of GiB)."""
    assert read_back.check(struct.pack(">i", 2**31 - 1) + bytes(10)) == "ok"


@pytest.fixture(scope="module", params=["native", "python"])
def read_single(request: pytest.FixtureRequest) -> Iterator[Isolated]:
    yield from isolated("read_message", native=request.param == "native")


@examples(300)
@given(
    properties=props,
    key=st.text(max_size=12),
    payload=st.binary(max_size=80),
    null=st.booleans(),
    event=st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 2**63, 2**64 - 1])),
    b64=st.booleans(),
)
def test_single_messages_with_any_reserved_properties_decode(
    read_single: Isolated,
    properties: dict[str, str],
    key: str,
    payload: bytes,
    null: bool,
    event: int,
    b64: bool,
) -> None:
    if P_ENTRY in properties and payload and properties[P_ENTRY] == "batch":
        payload = build_batch([Record(0, 1, None, b"x")]) if len(payload) % 2 else payload
    meta = {"props": properties, "key": key, "null": null, "event": event, "b64": b64}
    text = json.dumps(meta).encode("utf-8", "surrogatepass")
    assert read_single.check(frame(text, payload)) == "ok"


@pytest.fixture(scope="module")
def pulsar_codecs() -> Iterator[Isolated]:
    yield from isolated("pulsar_decompress", WIRE_ERROR)


@examples(300)
@given(
    codec=st.integers(0, 4),
    size=st.one_of(
        st.sampled_from([0, 1, LIMIT, LIMIT + 1, 2**31, 2**32 - 1]), st.integers(0, 5000)
    ),
    payload=st.binary(max_size=300),
)
def test_pulsar_payloads_of_any_declared_size(
    pulsar_codecs: Isolated, codec: int, size: int, payload: bytes
) -> None:
    pulsar_codecs.check(bytes([codec]) + size.to_bytes(4, "big") + payload)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_pulsar_bombs_are_corrupt_entries(pulsar_codecs: Isolated, codec: int) -> None:
    """A payload declaring 4 GiB (LZ4 sizes its output from it), and one declaring
    little but inflating to 64 MiB: both corrupt, within the bound."""
    zeros = bytes(64 << 20)
    payload = {
        1: bytes(cramjam.lz4.compress_block(zeros, store_size=False)),
        2: zlib.compress(zeros),
        3: bytes(cramjam.zstd.compress(zeros)),
        4: bytes(cramjam.snappy.compress_raw(zeros)),
    }[codec]
    for declared in (2**32 - 1, 1000):
        got = pulsar_codecs.check(bytes([codec]) + declared.to_bytes(4, "big") + payload)
        assert got.startswith("CorruptEntryError")


@st.composite
def broker_streams(draw: st.DrawFn) -> bytes:
    """MESSAGE frames as a broker sends them, a size in one changed to a hostile
    value or the stream cut short."""
    frames = []
    for _ in range(draw(st.integers(1, 3))):
        cmd = pb.BaseCommand(type=pb.BaseCommand.MESSAGE)
        cmd.message.consumer_id = 1
        cmd.message.message_id.ledgerId = 1
        cmd.message.message_id.entryId = 2
        meta = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=1)
        meta.compression = draw(st.sampled_from([0, 1, 2, 3, 4]))
        meta.uncompressed_size = draw(st.one_of(st.integers(0, 100), st.sampled_from([2**32 - 1])))
        payload = draw(st.binary(max_size=50))
        frames.append(
            bytearray(
                encode_payload_command(
                    cmd,
                    meta.SerializeToString(),
                    payload,
                    checksum=draw(st.booleans()),
                    broker_entry_metadata=draw(st.one_of(st.none(), st.just(b"\x08\x01"))),
                )
            )
        )
    target = draw(st.sampled_from(frames))
    at = draw(st.integers(0, max(0, len(target) - 4)))
    if draw(st.booleans()):
        struct.pack_into(">I", target, at, draw(hostile) & 0xFFFFFFFF)
    stream = b"".join(frames)
    return stream[: draw(st.integers(0, len(stream)))] if draw(st.booleans()) else stream


@pytest.fixture(scope="module")
def broker_bytes() -> Iterator[Isolated]:
    yield from isolated("pulsar_frames", WIRE_ERROR)


@examples(200)
@given(data=st.binary(max_size=300))
def test_arbitrary_broker_bytes(broker_bytes: Isolated, data: bytes) -> None:
    broker_bytes.check(data)


@examples(300)
@given(data=broker_streams())
def test_broker_frames_with_hostile_sizes(broker_bytes: Isolated, data: bytes) -> None:
    broker_bytes.check(data)


# -- the offsets topic, the offset index, the consumer protocol ---------------------


@pytest.fixture(scope="module")
def offsets_records() -> Iterator[Isolated]:
    yield from isolated("offsets_record", "kop.groups.offsets_codec:MalformedRecord")


def _group_payload(n: int) -> bytes:
    member = MemberMetadata("m", None, "c", "/h", 10, 20, (("range", b"\x00\x01"),), b"\x02")
    return (
        encode_group(GroupMetadata("g", "consumer", n, "range", "m", 5, (member,))).payload or b""
    )


json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6),
        st.sampled_from([2**63, -(2**63) - 1, 10**400, "Infinity"]),
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)  # fmt: skip


@examples(300)
@given(
    key=st.one_of(
        st.sampled_from(["g|grp", "o|grp|t|0", "o|grp|t|-1", "o|g%7C|t|99", "g|%zz"]),
        st.text(max_size=12),
    ),
    payload=st.one_of(
        st.binary(max_size=60),
        st.builds(lambda v: json.dumps(v).encode(), json_values),
        st.builds(_group_payload, st.integers(-(2**40), 2**40)),
        st.builds(
            lambda v, f: _edit_json(
                encode_offset(
                    "g", TopicPartition("t", 0), CommittedOffset(1, -1, "", 1, None)
                ).payload,
                f,
                v,
            ),
            json_values,
            st.sampled_from(["offset", "leader_epoch", "commit_ms", "expire_ms", "metadata", "v"]),
        ),
        st.just(b"[" * 5000),
    ),
)
def test_offsets_topic_records(offsets_records: Isolated, key: str, payload: bytes) -> None:
    offsets_records.check(frame(key.encode("utf-8", "surrogatepass"), payload))


def _edit_json(payload: bytes | None, field: str, value: object) -> bytes:
    v = json.loads(payload or b"{}")
    v[field] = value
    return json.dumps(v).encode()


@pytest.fixture(scope="module")
def index_messages() -> Iterator[Isolated]:
    yield from isolated("index_message")


@examples(300)
@given(
    key=st.sampled_from(["t-0|mark", "t-0|floor", "t-0|p7", "t-0|00000000000000000042", "x"]),
    payload=st.one_of(
        st.binary(max_size=40),
        st.builds(lambda v: json.dumps(v).encode(), json_values),
        st.builds(
            lambda v, f: json.dumps(
                {"l": 1, "e": 2, "b": -1, "n": 5, "t": 3, "o": 4, f: v}
            ).encode(),
            json_values,
            st.sampled_from(["l", "e", "b", "n", "t", "o"]),
        ),
        st.just(b"[" * 5000),
        st.just(b'{"l": Infinity, "e": 1, "b": 1, "n": 1}'),
        st.just(b'{"e": 1, "b": [[1, 2, 3, NaN]]}'),
    ),
)
def test_offset_index_messages(index_messages: Isolated, key: str, payload: bytes) -> None:
    assert index_messages.check(frame(key.encode(), payload)) == "ok"


@pytest.fixture(scope="module")
def member_bytes() -> Iterator[Isolated]:
    yield from isolated("consumer_protocol_bytes")


def _assignment(topics: list[tuple[str, list[int]]]) -> bytes:
    out = bytearray(struct.pack(">hi", 3, len(topics)))
    for name, parts in topics:
        raw = name.encode()
        out += struct.pack(">h", len(raw)) + raw + struct.pack(">i", len(parts))
        out += struct.pack(f">{len(parts)}i", *parts)
    return bytes(out + struct.pack(">i", -1))


@st.composite
def mutated_assignments(draw: st.DrawFn) -> bytes:
    """A valid assignment (or subscription: they start alike), one of its i16
    lengths or i32 counts replaced by a hostile value."""
    topics = draw(
        st.lists(
            st.tuples(st.text(max_size=5), st.lists(st.integers(0, 9), max_size=3)), max_size=3
        )
    )
    data = bytearray(_assignment(topics))
    at = draw(st.integers(0, len(data) - 4))
    if draw(st.booleans()):
        struct.pack_into(">h", data, at, draw(st.sampled_from([-1, -2, -6, -7, -32768, 32767])))
    else:
        struct.pack_into(">i", data, at, draw(st.sampled_from([-1, -6, 2**31 - 1, 2**20])))
    return bytes(data)


@examples(300)
@given(data=st.one_of(st.binary(max_size=100), mutated_assignments()))
def test_member_metadata_and_assignments(member_bytes: Isolated, data: bytes) -> None:
    assert member_bytes.check(data) == "ok"


@pytest.mark.parametrize(
    "data",
    [
        # an assignment of 2^31 - 1 topics: one empty topic, then a name of length -6,
        # which stepped the reader back onto that topic's partition count, 2^31 times
        struct.pack(">hi", 0, 2**31 - 1) + struct.pack(">hi", 0, 0) + struct.pack(">h", -6),
        # a subscription of 2^31 - 1 topics named by a length of -2: the same two
        # bytes again and again, an empty name collected each time
        struct.pack(">hih", 0, 2**31 - 1, -2),
    ],
)
def test_negative_lengths_do_not_walk_backwards(member_bytes: Isolated, data: bytes) -> None:
    """Before, each of these kept the event loop for hours (and the second built a
    list of 2^31 strings)."""
    assert member_bytes.check(data) == "ok"
