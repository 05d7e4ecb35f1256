"""Pulsar's binary framing (kop/pulsar/wire/frames.py): what we encode decodes back,
however the byte stream is split across receives, with and without the checksum and
a broker entry metadata prefix; a corrupt checksum is never accepted; a frame
larger than the limit stops the stream."""

from __future__ import annotations

import itertools
import struct

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kop.pulsar.wire.errors import ProtocolError
from kop.pulsar.wire.frames import (
    CorruptFrameError,
    Frame,
    FrameDecoder,
    encode_command,
    encode_payload_command,
    encode_payload_head,
    readdress_payload_head,
)
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

T = pb.BaseCommand.Type


def _send(seq: int) -> pb.BaseCommand:
    return pb.BaseCommand(
        type=T.SEND, send=pb.CommandSend(producer_id=7, sequence_id=seq, num_messages=3)
    )


def _message(entry: int) -> pb.BaseCommand:
    mid = pb.MessageIdData(ledgerId=12, entryId=entry)
    return pb.BaseCommand(type=T.MESSAGE, message=pb.CommandMessage(consumer_id=3, message_id=mid))


def _metadata(seq: int, key: str) -> pb.MessageMetadata:
    return pb.MessageMetadata(
        producer_name="p",
        sequence_id=seq,
        publish_time=1_700_000_000_000 + seq,
        partition_key=key,
        properties=[pb.KeyValue(key="k", value=key)],
    )


def _decode_all(decoder: FrameDecoder) -> list[Frame]:
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append(frame)
    return out


# One frame to encode: (kind, payload, checksum, broker entry metadata index or None)
frame_specs = st.lists(
    st.tuples(
        st.sampled_from(["ping", "send", "message"]),
        st.binary(max_size=3000),
        st.booleans(),
        st.one_of(st.none(), st.integers(min_value=0, max_value=2**40)),
    ),
    min_size=1,
    max_size=12,
)


def _encode(i: int, spec: tuple[str, bytes, bool, int | None]) -> tuple[bytes, Frame]:
    kind, payload, checksum, index = spec
    if kind == "ping":
        cmd = pb.BaseCommand(type=T.PING, ping=pb.CommandPing())
        return encode_command(cmd), Frame(cmd)
    meta = _metadata(i, f"key-{i}")
    if kind == "send":  # what the producer writes: head, then payload
        cmd = _send(i)
        data = encode_payload_head(cmd, meta.SerializeToString(), payload) + payload
        return data, Frame(cmd, meta, payload, None, True)
    cmd = _message(i)
    bem = None if index is None else pb.BrokerEntryMetadata(broker_timestamp=99, index=index)
    data = encode_payload_command(
        cmd,
        meta.SerializeToString(),
        payload,
        checksum=checksum,
        broker_entry_metadata=None if bem is None else bem.SerializeToString(),
    )
    return data, Frame(cmd, meta, payload, bem, checksum)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(frame_specs, st.lists(st.integers(min_value=0, max_value=100_000), max_size=20))
def test_frames_round_trip_across_arbitrary_splits(
    specs: list[tuple[str, bytes, bool, int | None]], cuts: list[int]
) -> None:
    encoded = [_encode(i, spec) for i, spec in enumerate(specs)]
    stream = b"".join(data for data, _ in encoded)
    points = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    decoder = FrameDecoder(min_free=64)
    got: list[Frame] = []
    for a, b in itertools.pairwise(points):
        decoder.feed(stream[a:b])
        got += _decode_all(decoder)
    assert got == [frame for _, frame in encoded]
    assert decoder.buffered == 0


@given(frame_specs, st.integers(min_value=1, max_value=5000), st.sampled_from([16, 4096]))
def test_transport_writes_into_the_decoder_buffer(
    specs: list[tuple[str, bytes, bool, int | None]], chunk: int, min_free: int
) -> None:
    """The BufferedProtocol path: receive into get_buffer(), report buffer_updated();
    a small buffer makes the decoder move leftovers to the front and grow."""
    encoded = [_encode(i, spec) for i, spec in enumerate(specs)]
    stream = b"".join(data for data, _ in encoded)
    decoder = FrameDecoder(min_free=min_free)
    got: list[Frame] = []
    at = 0
    while at < len(stream):
        buf = decoder.get_buffer(-1)  # a receive fills at most what is offered
        assert len(buf) >= min_free
        piece = stream[at : at + min(chunk, len(buf))]
        buf[: len(piece)] = piece
        del buf
        decoder.buffer_updated(len(piece))
        at += len(piece)
        got += _decode_all(decoder)
    assert got == [frame for _, frame in encoded]


def test_checksum_covers_metadata_size_to_end() -> None:
    meta = _metadata(0, "k").SerializeToString()
    payload = b"payload bytes"
    data = encode_payload_command(_send(0), meta, payload)
    (cmd_size,) = struct.unpack_from(">I", data, 4)
    at = 8 + cmd_size
    magic, crc = struct.unpack_from(">HI", data, at)
    assert magic == 0x0E01
    assert crc == crc32c.crc32c(data[at + 6 :])
    assert data[at + 6 :] == struct.pack(">I", len(meta)) + meta + payload
    assert (struct.unpack_from(">I", data)[0]) == len(data) - 4
    # the producer's two-piece form is the same bytes
    assert encode_payload_head(_send(0), meta, payload) + payload == data


@given(producer_id=st.sampled_from([0, 7, 300, 1 << 40]), seq=st.integers(0, 1 << 50))
def test_a_readdressed_head_names_the_new_producer_and_keeps_its_checksum(
    producer_id: int, seq: int
) -> None:
    """A pending entry re-sent after an attach under a new producer id."""
    meta = pb.MessageMetadata(producer_name="p", sequence_id=seq, publish_time=1)
    payload = b"entry-%d" % seq
    head = encode_payload_head(_send(seq), meta.SerializeToString(), payload)
    moved = readdress_payload_head(head, producer_id)
    decoder = FrameDecoder()
    decoder.feed(moved + payload)
    frame = decoder.next_frame()
    assert frame is not None and frame.checksum
    assert frame.command.send.producer_id == producer_id
    assert frame.command.send.sequence_id == seq and frame.command.send.num_messages == 3
    assert (frame.metadata, bytes(frame.payload or b"")) == (meta, payload)
    assert decoder.next_frame() is None


@given(st.binary(min_size=1, max_size=500), st.data())
def test_a_corrupt_checksum_is_rejected_and_the_stream_goes_on(
    payload: bytes, data: st.DataObject
) -> None:
    meta = _metadata(1, "k").SerializeToString()
    good = encode_payload_command(_message(1), meta, payload)
    # flip one bit anywhere the checksum covers (metadata size, metadata, payload)
    (cmd_size,) = struct.unpack_from(">I", good, 4)
    covered_from = 8 + cmd_size + 6
    at = data.draw(st.integers(min_value=covered_from, max_value=len(good) - 1))
    bit = data.draw(st.integers(min_value=0, max_value=7))
    bad = bytearray(good)
    bad[at] ^= 1 << bit
    ping = encode_command(pb.BaseCommand(type=T.PING, ping=pb.CommandPing()))
    decoder = FrameDecoder()
    decoder.feed(bytes(bad) + ping + good)
    with pytest.raises(CorruptFrameError) as caught:
        decoder.next_frame()
    assert caught.value.command.message.message_id.entryId == 1
    assert not caught.value.retriable
    frame = decoder.next_frame()
    assert frame is not None and frame.command.type == T.PING
    frame = decoder.next_frame()
    assert frame is not None and frame.payload == payload and frame.checksum


def test_a_wrong_checksum_value_is_rejected() -> None:
    meta = _metadata(1, "k").SerializeToString()
    good = encode_payload_command(_message(1), meta, b"abc")
    (cmd_size,) = struct.unpack_from(">I", good, 4)
    bad = bytearray(good)
    bad[8 + cmd_size + 2] ^= 0xFF  # the stored CRC itself
    decoder = FrameDecoder()
    decoder.feed(bytes(bad))
    with pytest.raises(CorruptFrameError, match="checksum"):
        decoder.next_frame()


def test_without_checksum_the_payload_is_taken_as_is() -> None:
    meta = _metadata(2, "k").SerializeToString()
    decoder = FrameDecoder()
    decoder.feed(encode_payload_command(_message(2), meta, b"xyz", checksum=False))
    frame = decoder.next_frame()
    assert frame is not None and frame.payload == b"xyz" and not frame.checksum


def test_metadata_overrunning_its_frame_is_corrupt() -> None:
    cmd = _message(3).SerializeToString()
    rest = cmd + struct.pack(">I", 1000) + b"short"
    decoder = FrameDecoder()
    decoder.feed(struct.pack(">II", len(rest) + 4, len(cmd)) + rest)
    with pytest.raises(CorruptFrameError, match="overruns"):
        decoder.next_frame()


def test_a_frame_over_the_limit_stops_the_stream() -> None:
    decoder = FrameDecoder(max_frame_size=1000)
    decoder.feed(struct.pack(">I", 1001))
    with pytest.raises(ProtocolError):
        decoder.next_frame()


def test_a_command_overrunning_its_frame_stops_the_stream() -> None:
    decoder = FrameDecoder()
    decoder.feed(struct.pack(">II", 8, 100) + b"\0" * 4)
    with pytest.raises(ProtocolError):
        decoder.next_frame()


def test_a_large_frame_is_received_in_place() -> None:
    """A frame bigger than the initial buffer: get_buffer offers room for all of it."""
    payload = bytes(range(256)) * 4096  # 1 MiB
    data = encode_payload_command(_message(4), _metadata(4, "k").SerializeToString(), payload)
    decoder = FrameDecoder(max_frame_size=2 << 20)
    decoder.feed(data[:100])
    assert decoder.next_frame() is None
    room = decoder.get_buffer(-1)
    assert len(room) >= len(data) - 100
    room[: len(data) - 100] = data[100:]
    del room
    decoder.buffer_updated(len(data) - 100)
    frame = decoder.next_frame()
    assert frame is not None and frame.payload == payload
