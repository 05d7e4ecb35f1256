"""Plain data that crosses the storage port: positions, messages, topic facts, errors."""

from __future__ import annotations

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


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    payload: bytes | None  # None = a null value
    properties: dict[str, str]
    partition_key: str | None
    event_time: int | None


def message_size(message: OutgoingMessage) -> int:
    """What a message weighs in a send queue: one estimate for the writer's budget
    and for whoever waits for room in it."""
    props = sum(len(k) + len(v) for k, v in message.properties.items())
    return 64 + len(message.payload or b"") + props


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


class Idle:
    """A reader's marker: everything before it was all the topic held."""

    def __repr__(self) -> str:
        return "IDLE"


IDLE = Idle()

# A write named by its writer: (writer name, index of the message among its sends).
WriteRef = tuple[str, int]


class StorageError(Exception):
    """A storage operation failed; `retriable` says whether a client should try again."""

    def __init__(self, message: str, retriable: bool = True) -> None:
        super().__init__(message)
        self.retriable = retriable


class StorageUnavailable(StorageError):
    """The storage's admin endpoint cannot be reached; callers answer with a retriable error."""


class AdminError(Exception):
    """The storage's admin API refused a request; `status` is its HTTP-like status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"storage admin {status}: {message}")
        self.status = status


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
