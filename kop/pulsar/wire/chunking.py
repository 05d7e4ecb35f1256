"""A message larger than the broker's `maxMessageSize`, cut into chunks as the
Java client's `ProducerImpl` does (chunking is for single messages only, never a
batch), so Pulsar consumers get it whole and kop's reader reassembles it
(`kop.pulsar.wire.chunks`).

Each chunk is an entry of its own repeating the message's metadata, plus its
`uuid`, `chunk_id` of `num_chunks_from_msg`, and `total_chunk_msg_size`: the size
of the payload as stored (compressed first, then cut; `uncompressed_size` stays the
message's). As in Java, every chunk carries the message's one sequence id and is
sent with `is_chunk`: the broker's deduplication looks at a message's last chunk
only, so a resend after a reconnect stores the message at most once (a non-last
chunk stored twice is one the reader skips or starts again from).

Where the message is in the log: at its first chunk when its chunks are
consecutive entries (nothing in between, so a reader places it there too,
docs/offsets.md), else at its last.
"""

from __future__ import annotations

from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

Piece = tuple[pb.MessageMetadata, bytes]

# What chunk fields add to a message's metadata, at most: a uuid of the producer's
# name (at most a few hundred bytes as brokers name them) and a sequence id, three
# varint ints.
_CHUNK_FIELDS = 512 + 3 * 12


def chunk_size(metadata: pb.MessageMetadata, limit: int) -> int:
    """Payload bytes per chunk of a message with `metadata`, for entries (metadata
    and payload) of at most `limit` bytes."""
    return limit - metadata.ByteSize() - _CHUNK_FIELDS


def cut(
    metadata: pb.MessageMetadata, payload: bytes | memoryview, size: int, uuid: str
) -> list[Piece]:
    """The chunks of a message whose payload is over `size` bytes, in order."""
    if metadata.HasField("num_messages_in_batch"):
        raise ValueError("a batch is never chunked")
    if size <= 0:
        raise ValueError(f"no room for a chunk ({size} bytes)")
    view = memoryview(payload)
    parts = [bytes(view[i : i + size]) for i in range(0, len(payload), size)]
    out: list[Piece] = []
    for i, part in enumerate(parts):
        meta = pb.MessageMetadata()
        meta.CopyFrom(metadata)
        meta.uuid = uuid
        meta.chunk_id = i
        meta.num_chunks_from_msg = len(parts)
        meta.total_chunk_msg_size = len(payload)
        out.append((meta, part))
    return out


def place(chunks: list[tuple[int, int]]) -> tuple[int, int]:
    """Where a reader puts a message whose chunks were stored at `chunks` (ledger,
    entry), in order: the first when they are consecutive, else the last; (-1, -1)
    when a chunk's place is unknown (its message was stored before: a resend the
    broker deduplicated)."""
    if any(ledger < 0 for ledger, _ in chunks):
        return (-1, -1)
    first, last = chunks[0], chunks[-1]
    consecutive = all(
        ledger == first[0] and entry == first[1] + i for i, (ledger, entry) in enumerate(chunks)
    )
    return first if consecutive else last
