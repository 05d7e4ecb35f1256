"""Chunked messages, reassembled (Pulsar's message chunking, Java's
`ConsumerImpl.processMessageChunk`).

A native producer with chunking on cuts a message larger than the broker's
`maxMessageSize` into entries of its own: each carries the message's `uuid`, its
`chunk_id` of `num_chunks_from_msg`, and `total_chunk_msg_size` (the payload's
size, compressed when it is: the payload is compressed first and then cut, so a
chunk does not decompress on its own).

The rule, per entry, so that offsets stay a pure function of the log whatever a
reader saw before (docs/offsets.md): a chunk entry that is not its message's last
counts zero and is handed to nobody; the last chunk counts one, and is handed on
as the whole message, or, where the reader could not put it together (its first
chunks before the reader's start or deleted, a chunk missing, more than the bound),
as a corrupt entry (a null record, counted as malformed). Everything else is not a
chunk: a batch, and an entry whose chunk fields make no sense.

Bounded: a message declaring more than `max_message_bytes` is never buffered; at
most `max_pending` messages are put together at once (the oldest is dropped, as
Java's `maxPendingChunkedMessage`); a producer's unfinished message is dropped when
the same producer writes anything else (it gave up on it: it died, or restarted),
which is what Java's `expireTimeOfIncompleteChunkedMessage` is for, without a clock.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.raw_entry import Position

MAX_PENDING_CHUNKED = 10  # messages put together at once per reader (Java's default)


def is_chunk(metadata: pb.MessageMetadata) -> bool:
    """Whether an entry is one chunk of a larger message (see the module's rule)."""
    n = metadata.num_chunks_from_msg
    return n > 1 and metadata.chunk_id < n and not metadata.HasField("num_messages_in_batch")


@dataclass(slots=True)
class Assembled:
    """A chunked message at its last chunk: `payload` joined (still compressed as its
    metadata says), or, with `corrupt` set, none."""

    first: Position  # where the first chunk this reader saw of it is
    last: Position  # its last chunk
    metadata: pb.MessageMetadata  # the last chunk's (every chunk repeats the message's)
    payload: bytes
    held: int  # the bytes its chunks held, given back when it is handed on
    corrupt: str | None = None


@dataclass(slots=True)
class _Message:
    producer: str
    first: Position
    chunks: int
    total: int
    next_chunk: int = 0
    parts: list[bytes] = field(default_factory=list)
    size: int = 0  # payload bytes in `parts`
    held: int = 0  # what the reader holds for `parts`
    broken: str | None = None


class ChunkAssembler:
    """One reader's messages being put together. `held` is what their chunks hold
    (the reader's read-ahead budget counts it)."""

    def __init__(self, max_message_bytes: int, max_pending: int = MAX_PENDING_CHUNKED) -> None:
        self._max_bytes = max_message_bytes
        self._max_pending = max(1, max_pending)
        self._messages: OrderedDict[str, _Message] = OrderedDict()
        self._by_producer: dict[str, str] = {}
        self.held = 0
        self.dropped = 0  # unfinished messages given up on (a producer gave up, or the bound)

    @property
    def pending(self) -> int:
        return len(self._messages)

    def other(self, metadata: pb.MessageMetadata) -> int:
        """An entry that is no chunk: its producer gave up on any message it had
        unfinished. Returns the bytes freed."""
        key = self._by_producer.get(metadata.producer_name)
        return self._drop(key) if key is not None else 0

    def chunk(
        self, position: Position, metadata: pb.MessageMetadata, payload: bytes, held: int
    ) -> tuple[Assembled | None, int]:
        """Takes one chunk holding `held` bytes: the message once this is its last
        chunk (else None), and the bytes freed meanwhile."""
        key = metadata.uuid or f"{metadata.producer_name}-{metadata.sequence_id}"
        chunk_id, chunks = metadata.chunk_id, metadata.num_chunks_from_msg
        freed = 0
        message = self._messages.get(key)
        if message is not None and chunk_id == 0:
            freed += self._drop(key)  # sent again from its start: begin anew
            message = None
        if message is None:
            message, more = self._begin(key, position, metadata)
            freed += more
        if message.broken is None:
            if chunks != message.chunks:
                why = f"chunk {chunk_id} says {chunks} chunks, not {message.chunks}"
                freed += self._break(message, why)
            elif chunk_id < message.next_chunk:
                return None, freed + held  # a chunk sent twice: the first one stands
            elif chunk_id > message.next_chunk:
                freed += self._break(message, f"chunk {message.next_chunk} of {chunks} is missing")
            elif message.size + len(payload) > message.total:
                freed += self._break(message, f"chunks exceed the declared {message.total} bytes")
        if message.broken is None:
            message.parts.append(payload)
            message.size += len(payload)
            message.held += held
            self.held += held
        else:
            freed += held
        message.next_chunk = max(message.next_chunk, chunk_id + 1)
        if chunk_id != chunks - 1:
            return None, freed
        self._forget(key)
        self.held -= message.held
        corrupt = message.broken
        if corrupt is None and message.size != message.total:
            corrupt = f"chunks hold {message.size} bytes, the message {message.total}"
        if corrupt is not None:
            freed += message.held
            done = Assembled(message.first, position, metadata, b"", 0, _why(corrupt))
        else:
            joined = b"".join(message.parts)
            done = Assembled(message.first, position, metadata, joined, message.held)
        return done, freed

    def clear(self) -> int:
        """Everything dropped (the reader closes); returns the bytes freed."""
        freed = self.held
        self._messages.clear()
        self._by_producer.clear()
        self.held = 0
        return freed

    def _begin(
        self, key: str, position: Position, metadata: pb.MessageMetadata
    ) -> tuple[_Message, int]:
        freed = self.other(metadata)  # the producer's unfinished one, if any
        total = metadata.total_chunk_msg_size
        message = _Message(metadata.producer_name, position, metadata.num_chunks_from_msg, total)
        if metadata.chunk_id != 0:
            message.broken = "its first chunks were not read (before the reader's start, deleted)"
        elif total > self._max_bytes or metadata.uncompressed_size > self._max_bytes:
            size = max(total, metadata.uncompressed_size)
            message.broken = (
                f"it declares {size} bytes, more than {self._max_bytes} "
                "(max_uncompressed_entry_bytes)"
            )
        while len(self._messages) >= self._max_pending:
            oldest = next(iter(self._messages))
            freed += self._drop(oldest)
        self._messages[key] = message
        self._by_producer[message.producer] = key
        return message, freed

    def _break(self, message: _Message, why: str) -> int:
        """Its chunks are useless now: returns the bytes they held."""
        freed, message.held = message.held, 0
        message.broken = why
        self.held -= freed
        message.parts.clear()
        return freed

    def _drop(self, key: str) -> int:
        message = self._forget(key)
        self.dropped += 1
        self.held -= message.held
        return message.held

    def _forget(self, key: str) -> _Message:
        message = self._messages.pop(key)
        if self._by_producer.get(message.producer) == key:
            del self._by_producer[message.producer]
        return message


def _why(reason: str) -> str:
    return f"chunked message incomplete: {reason}"
