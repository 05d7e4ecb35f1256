"""Entry points for `fuzz.isolated.Isolated`: every decoder kop runs on bytes from
outside, each as a function of one `bytes` (structured inputs are framed by the
test that builds them, see `frame`). Each docstring says what the decoder may
raise; anything else is a bug, and so is a crash or a hang.

Bounds are small here (1 MiB decompressed) so that a test's decompression bomb
is cheap to build; the child's address space is limited, so one that got
through would fail the check instead of swapping the machine.
"""

from __future__ import annotations

import contextlib
import json
import struct

from kop.entries import codec as entries
from kop.entries.formats import EntryFormat
from kop.groups import consumer_protocol, offsets_codec
from kop.log import checkpoint_store
from kop.protocol import compression
from kop.protocol.records import split_batches
from kop.pulsar.wire import compression as pulsar_compression
from kop.pulsar.wire.frames import FrameDecoder
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.storage.types import Position, StoredEntry, StoredMessage

LIMIT = 1 << 20
MAX_BATCH = 1 << 20
MAX_ENTRY = 256 << 10
_PARTS = struct.Struct(">I")


def frame(*parts: bytes) -> bytes:
    """Several byte strings as one input: each with its u32 size."""
    return b"".join(_PARTS.pack(len(p)) + p for p in parts)


def _unframe(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        (n,) = _PARTS.unpack_from(data, pos)
        out.append(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return out


# -- Kafka produce: KafkaError -----------------------------------------------------


def _produce(data: bytes, fmt: EntryFormat, batching: bool) -> None:
    for head, batch in split_batches(data, max_batch_bytes=MAX_BATCH):
        entries.encode(head, batch, fmt, batching, 0, MAX_ENTRY, LIMIT)


def produce_kafka(data: bytes) -> None:
    """A Produce partition's records into a `kafka`-format topic. KafkaError."""
    _produce(data, EntryFormat.KAFKA, True)


def produce_pulsar(data: bytes) -> None:
    """... into a `pulsar`-format topic, batching. KafkaError."""
    _produce(data, EntryFormat.PULSAR, True)


def produce_pulsar_unbatched(data: bytes) -> None:
    """... into a `pulsar`-format topic, one entry per record. KafkaError."""
    _produce(data, EntryFormat.PULSAR, False)


def kafka_decompress(data: bytes) -> None:
    """[codec byte][payload] through kop's bounded Kafka codecs. DecompressionFailed."""
    codec, payload = data[:1], data[1:]
    fn = {
        b"\x01": compression.gzip,
        b"\x02": compression.kafka_snappy,
        b"\x03": compression.lz4_frame,
        b"\x04": compression.zstd,
    }.get(codec, compression.zstd)
    out = fn(payload, LIMIT)
    assert len(out) <= LIMIT


# -- Pulsar entries read back: never raise ----------------------------------------


def read_batch_entry(data: bytes) -> None:
    """[i32 count][layout]: a batch entry as the tail follower decodes it. Never
    raises; a layout that does not parse takes `count` offsets."""
    (count,) = struct.unpack_from(">i", data.ljust(4, b"\x00"))
    entry = StoredEntry(Position(1, 2), "p", 0, 1_700_000_000_000, count, None, data[4:])
    got = entries.decode(entry, 100)
    assert got.count >= 1
    assert len(got.data) <= 16 * len(data) + (64 << 10)  # linear in the entry


def read_message(data: bytes) -> None:
    """A single-message entry, JSON {"props", "key", "payload" (hex), "b64", "event"}
    framed by `frame(json, payload)`. Never raises."""
    meta_text, payload = _unframe(data)
    meta = json.loads(meta_text)
    msg = StoredMessage(
        Position(1, 2),
        payload,
        meta["null"],
        meta["props"],
        meta["key"],
        meta["event"],
        1_700_000_000_000,
        key_b64=meta["b64"],
    )
    entry = StoredEntry(msg.position, "p", 0, msg.publish_time, 1, msg)
    got = entries.decode(entry, 5)
    assert got.count >= 1


def pulsar_decompress(data: bytes) -> None:
    """[u8 codec][u32 uncompressed_size][payload]: an entry's payload as kop's Pulsar
    reader decompresses it. CorruptEntryError (a PulsarWireError)."""
    head = data[:5].ljust(5, b"\x00")
    codec, size = head[0] % 5, int.from_bytes(head[1:5], "big")
    meta = pb.MessageMetadata(compression=codec, uncompressed_size=size)
    out = pulsar_compression.decompress(meta, data[5:], LIMIT)
    assert len(out) <= LIMIT or codec == pb.NONE


def pulsar_frames(data: bytes) -> None:
    """Bytes from a broker, fed in 7-byte pieces, frames taken and payloads
    decompressed as a reader would. ProtocolError ends the stream; a corrupt
    payload frame is skipped. PulsarWireError."""
    decoder = FrameDecoder(max_frame_size=1 << 20)
    for at in range(0, len(data), 7):
        decoder.feed(data[at : at + 7])
        while True:
            try:
                frame_ = decoder.next_frame()
            except pulsar_compression.CorruptEntryError:
                continue
            if frame_ is None:
                break
            if frame_.metadata is not None and frame_.payload is not None:
                with contextlib.suppress(pulsar_compression.CorruptEntryError):
                    pulsar_compression.decompress(frame_.metadata, frame_.payload, LIMIT)


# -- the offsets topic and the offset index ----------------------------------------


def offsets_record(data: bytes) -> None:
    """frame(partition key (UTF-8), payload) of the offsets topic. MalformedRecord."""
    key, payload = _unframe(data)
    offsets_codec.decode(key.decode(), payload)


def index_message(data: bytes) -> None:
    """frame(partition key (UTF-8), payload) of the offset-index topic. Never raises
    (an unreadable message is logged and skipped)."""
    key, payload = _unframe(data)
    msg = StoredMessage(Position(1, 1), payload, not payload, {}, key.decode(), 0, 0)
    checkpoint_store._apply({}, "index", msg)


def consumer_protocol_bytes(data: bytes) -> None:
    """A member's subscription or assignment bytes. Never raises (None: not one)."""
    consumer_protocol.assigned_partitions(data)
    consumer_protocol.subscribed_topics(data)
