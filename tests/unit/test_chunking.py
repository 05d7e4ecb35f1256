"""kop writes a message too large for one entry in chunks as the Java client does:
whatever the size, a reader (kop's, and so any Pulsar client's rules) puts exactly
the message back together, every chunk fits the broker's limit, and the message's
place in the log is where a reader puts it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kop.pulsar.wire.chunking import chunk_size, cut, place
from kop.pulsar.wire.chunks import ChunkAssembler, is_chunk
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb


def _meta() -> pb.MessageMetadata:
    return pb.MessageMetadata(
        producer_name="standalone-0-7", sequence_id=41, publish_time=1,
        partition_key="k", uncompressed_size=0,
        properties=[pb.KeyValue(key="__kafka.entry", value="batch")],
    )  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(payload=st.binary(min_size=1, max_size=20_000), limit=st.integers(700, 5000))
def test_chunks_fit_the_limit_and_reassemble_exactly(payload: bytes, limit: int) -> None:
    meta = _meta()
    size = chunk_size(meta, limit)
    pieces = cut(meta, payload, size, "standalone-0-7-41")
    assert all(m.ByteSize() + len(p) <= limit for m, p in pieces)
    assert {m.sequence_id for m, _ in pieces} == {41}
    assembler = ChunkAssembler(1 << 20)
    done = None
    for i, (m, p) in enumerate(pieces):
        if len(pieces) > 1:
            assert is_chunk(m)
        done, _ = assembler.chunk((1, i), m, p, len(p))
    if len(pieces) > 1:
        assert done is not None and done.corrupt is None and done.payload == payload
        assert done.first == (1, 0)
    else:
        assert pieces[0][1] == payload


def test_a_batch_is_never_chunked() -> None:
    meta = _meta()
    meta.num_messages_in_batch = 3
    with pytest.raises(ValueError):
        cut(meta, b"x" * 100, 10, "u")


@given(ledger=st.integers(0, 100), entry=st.integers(0, 1000), n=st.integers(2, 6))
def test_consecutive_chunks_place_the_message_at_its_first(ledger: int, entry: int, n: int) -> None:
    chunks = [(ledger, entry + i) for i in range(n)]
    assert place(chunks) == (ledger, entry)


def test_interleaved_chunks_place_it_at_its_last_and_a_deduplicated_one_nowhere() -> None:
    assert place([(3, 0), (3, 2), (3, 3)]) == (3, 3)  # another writer's entry at 1
    assert place([(3, 9), (4, 0)]) == (4, 0)  # a new ledger in between
    assert place([(3, 0), (-1, -1)]) == (-1, -1)
