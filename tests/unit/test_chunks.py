"""Chunked messages from native Pulsar producers are put back together (issue 19, 5).

The model: producers each write messages one after another, a large one cut into
chunks; their entries interleave in the topic. Whatever the interleaving, each
chunked message comes out once, whole, at its last chunk, and a chunk that is not a
message's last counts zero. Whatever is lost (a reader starting mid-message, a
chunk missing, a chunk sent twice, a producer giving up), the count stays per
entry and no message comes out with wrong bytes: it is whole or marked corrupt.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from kop.pulsar.wire.chunks import ChunkAssembler, is_chunk
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.raw_entry import Position


@dataclass(frozen=True)
class Entry:
    metadata: pb.MessageMetadata
    payload: bytes
    message: tuple[str, int]  # (producer, sequence id): which message it belongs to


def cut(producer: str, seq: int, body: bytes, chunk: int) -> list[Entry]:
    """How a native producer writes a message: whole when it fits in `chunk` bytes,
    else chunks of `chunk` bytes carrying the message's uuid, id, count and size."""
    if len(body) <= chunk:
        meta = pb.MessageMetadata(producer_name=producer, sequence_id=seq, publish_time=1)
        return [Entry(meta, body, (producer, seq))]
    parts = [body[i : i + chunk] for i in range(0, len(body), chunk)]
    out = []
    for i, part in enumerate(parts):
        meta = pb.MessageMetadata(
            producer_name=producer,
            sequence_id=seq,
            publish_time=1,
            uuid=f"{producer}-{seq}",
            chunk_id=i,
            num_chunks_from_msg=len(parts),
            total_chunk_msg_size=len(body),
        )
        out.append(Entry(meta, part, (producer, seq)))
    return out


@st.composite
def topics(draw: st.DrawFn) -> tuple[list[Entry], dict[tuple[str, int], bytes]]:
    """Up to three producers' messages, interleaved as a broker may store them."""
    streams: list[list[Entry]] = []
    bodies: dict[tuple[str, int], bytes] = {}
    for producer in draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True)):
        stream: list[Entry] = []
        for seq in range(draw(st.integers(1, 5))):
            body = draw(st.binary(min_size=0, max_size=60))
            bodies[(producer, seq)] = body
            stream += cut(producer, seq, body, draw(st.integers(8, 30)))
        streams.append(stream)
    entries: list[Entry] = []
    while any(streams):
        stream = draw(st.sampled_from([s for s in streams if s]))
        entries.append(stream.pop(0))
    return entries, bodies


def last_chunk(entry: Entry) -> bool:
    m = entry.metadata
    return not is_chunk(m) or m.chunk_id == m.num_chunks_from_msg - 1


def feed(
    entries: list[Entry], assembler: ChunkAssembler
) -> tuple[list[tuple[int, bytes | None]], int]:
    """(index of the entry it came out at, its bytes or None when corrupt) per record,
    as the reader hands them on, and the bytes given back along the way."""
    out: list[tuple[int, bytes | None]] = []
    freed = 0
    for i, e in enumerate(entries):
        position: Position = (1, i)
        if not is_chunk(e.metadata):
            freed += assembler.other(e.metadata)
            out.append((i, e.payload))
            continue
        done, more = assembler.chunk(position, e.metadata, e.payload, len(e.payload))
        freed += more
        if done is not None:
            assert done.last == position and done.first <= position
            freed += done.held
            out.append((i, None if done.corrupt else done.payload))
    return out, freed


@settings(max_examples=300, deadline=None)
@given(topics())
def test_every_message_comes_out_whole_at_its_last_chunk(
    topic: tuple[list[Entry], dict[tuple[str, int], bytes]],
) -> None:
    entries, bodies = topic
    assembler = ChunkAssembler(max_message_bytes=1 << 20)
    out, freed = feed(entries, assembler)
    expected = [(i, bodies[e.message]) for i, e in enumerate(entries) if last_chunk(e)]
    assert out == expected
    assert assembler.held == 0 and assembler.pending == 0
    assert freed == sum(len(e.payload) for e in entries if is_chunk(e.metadata))


@settings(max_examples=300, deadline=None)
@given(topics(), st.data())
def test_whatever_is_lost_the_count_is_per_entry_and_no_bytes_are_wrong(
    topic: tuple[list[Entry], dict[tuple[str, int], bytes]], data: st.DataObject
) -> None:
    entries, bodies = topic
    # A reader starting anywhere, entries missing or stored twice.
    start = data.draw(st.integers(0, len(entries)))
    damaged: list[Entry] = []
    for e in entries[start:]:
        damaged += [e] * data.draw(st.sampled_from([0, 1, 1, 1, 2]))
    assembler = ChunkAssembler(max_message_bytes=1 << 20, max_pending=2)
    out, freed = feed(damaged, assembler)
    assert [i for i, _ in out] == [i for i, e in enumerate(damaged) if last_chunk(e)]
    for i, got in out:
        if got is not None:
            assert got == bodies[damaged[i].message]
    assert assembler.pending <= 2
    held = assembler.held
    assert freed + assembler.clear() == sum(len(e.payload) for e in damaged if is_chunk(e.metadata))
    assert held >= 0 and assembler.held == 0


def test_a_message_declaring_more_than_the_bound_is_never_buffered() -> None:
    entries = cut("a", 0, b"x" * 100, 10)
    for e in entries:
        e.metadata.total_chunk_msg_size = 1 << 30  # lies, or is just too large
    assembler = ChunkAssembler(max_message_bytes=1 << 20)
    out, _ = feed(entries, assembler)
    assert out == [(9, None)]
    assert assembler.held == 0


def test_a_producer_that_gives_up_mid_message_frees_it() -> None:
    """A producer died after two of five chunks and started over: its next message
    drops the unfinished one, which never comes out (its chunks count zero)."""
    entries = cut("a", 0, b"x" * 50, 10)[:2] + cut("a", 1, b"y" * 30, 10) + cut("a", 2, b"z", 10)
    assembler = ChunkAssembler(max_message_bytes=1 << 20)
    out, _ = feed(entries, assembler)
    assert out == [(4, b"y" * 30), (5, b"z")]
    assert assembler.held == 0 and assembler.dropped == 1


def test_compressed_chunks_are_joined_before_decompressing() -> None:
    body = zlib.compress(b"kop" * 1000)
    entries = cut("a", 0, body, 100)
    assembler = ChunkAssembler(max_message_bytes=1 << 20)
    out, _ = feed(entries, assembler)
    assert len(out) == 1 and zlib.decompress(out[0][1] or b"") == b"kop" * 1000
