"""Plain data that crosses the storage port: positions, messages, topic facts, errors."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NamedTuple


class Position(NamedTuple):
    """Where a message sits in a topic partition. Ordered as stored. `batch` is the
    index inside a batched entry, -1 for a message that is an entry of its own."""

    ledger: int
    entry: int
    batch: int = -1

    @property
    def entry_key(self) -> tuple[int, int]:
        """The stored entry holding this message (readers start at entries)."""
        return (self.ledger, self.entry)

    @property
    def is_entry_start(self) -> bool:
        return self.batch <= 0


class WriterMode(enum.Enum):
    """How a writer holds its topic (Pulsar's producer access modes)."""

    SHARED = "shared"  # beside any other shared writer
    EXCLUSIVE = "exclusive"  # refused (WriterBusy) while another writer holds the topic
    FENCING = "fencing"  # takes the topic: every other writer fails with WriterFenced
    # Takes the topic as FENCING does, then writes beside shared writers (Pulsar
    # applications' producers) until another writer takes it (D21).
    FENCING_SHARED = "fencing-shared"


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    payload: bytes | None  # None = a null value
    properties: dict[str, str]
    partition_key: str | None
    event_time: int | None
    key_b64: bool = False  # the partition key is base64 of a binary key (Pulsar's flag)


def message_size(message: OutgoingMessage) -> int:
    """What a message weighs in a send queue: one estimate for the writer's budget
    and for whoever waits for room in it."""
    props = sum(len(k) + len(v) for k, v in message.properties.items())
    return 64 + len(message.payload or b"") + props


@dataclass(frozen=True, slots=True)
class OutgoingEntry:
    """One entry to store, all or nothing: a single message, or `count` messages
    in the batch layout (`kop.storage.batch_layout`), which Pulsar applications
    read as `count` messages. `properties` of a batch are the entry's own (its
    outer metadata), never shown to Pulsar applications as message properties.
    `codec` is the Kafka codec its records came in (0 none, 1 gzip, 2 snappy, 3 lz4,
    4 zstd): the storage keeps the entry compressed in its own equivalent, so that
    readers can serve the records in their producer's codec."""

    message: OutgoingMessage | None = None
    batch: bytes = b""
    count: int = 1
    properties: dict[str, str] = field(default_factory=dict)
    codec: int = 0
    # The Pulsar schema version its messages are written in (8 bytes, big-endian, as
    # Pulsar numbers them): a typed Pulsar consumer decodes them with that schema.
    schema_version: bytes | None = None

    # Its weight in a send queue (see `message_size`): asked several times per write
    # (the appender's room, the writer's budget), so worked out once.
    size: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.message is not None:
            size = message_size(self.message)
        else:
            props = sum(len(k) + len(v) for k, v in self.properties.items())
            size = 64 + len(self.batch) + props
        object.__setattr__(self, "size", size)

    @classmethod
    def of(cls, message: OutgoingMessage) -> OutgoingEntry:
        return cls(message=message)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    position: Position
    payload: bytes
    null_value: bool
    properties: dict[str, str]
    partition_key: str
    event_time: int  # 0 = not set
    publish_time: int
    producer_name: str = ""
    key_b64: bool = False  # Pulsar's flag: the partition key is base64 of binary bytes
    # Pulsar's compaction left this message's place in its batch, not the message:
    # it still takes its offset, and nothing is served for it.
    compacted_out: bool = False


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One stored entry, as readers deliver it: a single message (`message`), or a
    batch of `count` messages in the batch layout (`batch`, uncompressed) with the
    entry's own `properties`. `sequence_id` is its writer's numbering of it. `codec`
    is the Kafka codec it was stored compressed with (see OutgoingEntry); readers
    deliver it uncompressed."""

    position: Position  # batch = -1: readers deliver whole entries
    producer_name: str
    sequence_id: int
    publish_time: int
    count: int
    message: StoredMessage | None = None
    batch: bytes = b""
    properties: dict[str, str] = field(default_factory=dict)
    codec: int = 0
    schema_version: bytes | None = None  # see OutgoingEntry


def stored_as(
    out: OutgoingEntry, position: Position, producer: str, sequence_id: int, publish_time: int
) -> StoredEntry:
    """What a reader gets back for an entry written as `out`: every storage's
    receipts say it the same way."""
    if out.message is None:
        return StoredEntry(
            position, producer, sequence_id, publish_time, out.count, None, out.batch,
            dict(out.properties), out.codec, out.schema_version,
        )  # fmt: skip
    m = out.message
    message = StoredMessage(
        position=position,
        payload=m.payload or b"",
        null_value=m.payload is None,
        properties=dict(m.properties),
        partition_key=m.partition_key or "",
        event_time=m.event_time or 0,
        publish_time=publish_time,
        producer_name=producer,
        key_b64=m.key_b64,
    )
    return StoredEntry(
        position, producer, sequence_id, publish_time, 1, message, codec=out.codec,
        schema_version=out.schema_version,
    )  # fmt: skip


class Idle:
    """A reader's marker: everything before it was all the topic held."""

    def __repr__(self) -> str:
        return "IDLE"


IDLE = Idle()

# A write named by its writer: (writer name, sequence id of its first entry).
WriteRef = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a durable subscription stands: every entry up to `mark_delete` is
    acknowledged (an entry of -1: none of its ledger yet), and beyond it the entries in
    `acked_after`, ranges of (first exclusive, last inclusive) entry keys, as Pulsar's
    cursor keeps individual acknowledgements."""

    mark_delete: tuple[int, int]
    acked_after: tuple[tuple[tuple[int, int], tuple[int, int]], ...] = ()

    def acked(self, key: tuple[int, int]) -> bool:
        """Is the entry at `key` acknowledged?"""
        return key <= self.mark_delete or any(lo < key <= hi for lo, hi in self.acked_after)


@dataclass(frozen=True, slots=True)
class Delivered:
    """An entry a shared subscription's dispatcher gave us: where it is, how often it
    was given out before (Pulsar's redelivery count), and the attachment it came on
    (`SharedSubscription.epoch`: an attachment that is gone took its entries back)."""

    position: Position
    redeliveries: int
    epoch: int


class StaleDelivery(Exception):
    """Acknowledging a delivery whose attachment is gone: the subscription took it back."""


class StorageError(Exception):
    """A storage operation failed; `retriable` says whether a client should try again."""

    def __init__(self, message: str, retriable: bool = True) -> None:
        super().__init__(message)
        self.retriable = retriable


class WriterFenced(StorageError):
    """A fencing writer took the topic over: this writer's sends fail for good. What
    the storage acknowledged to it precedes every entry of the writer that fenced it;
    whoever holds a fenced writer no longer owns the topic."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=False)


class WriterBusy(StorageError):
    """An exclusive writer was refused: another writer holds the topic."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=False)


class StorageUnavailable(StorageError):
    """The storage's admin endpoint cannot be reached; callers answer with a retriable error."""


class AdminError(Exception):
    """The storage's admin API refused a request; `status` is its HTTP-like status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"storage admin {status}: {message}")
        self.status = status
        self.reason = message


@dataclass(frozen=True, slots=True)
class TopicInfo:
    partitions: int  # 0 = a non-partitioned topic (one Kafka partition)
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def kafka_partitions(self) -> int:
        return max(1, self.partitions)

    @property
    def partitioned(self) -> bool:
        return self.partitions > 0
