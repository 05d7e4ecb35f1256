"""The Protocols the partition log and the topic catalog are written against.

Narrow on purpose (the shape of Tansu's `Storage` trait): ordered appends of
whole entries that name each write by its writer, in-order readers of entries
from a position, where the log now begins (Pulsar deletes whole ledgers behind
kop's back) and where it ends, and the few admin calls topics need. The unit is
the entry, never the message: a Kafka batch is one entry (one send, one read),
so nothing on the hot path costs a call per record. Pulsar implements it in
`kop/pulsar`; an in-memory log with faults on command implements it in `tests/sim`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.types import (
    Cursor,
    Delivered,
    Idle,
    OutgoingEntry,
    Position,
    StoredEntry,
    TopicInfo,
    WriteRef,
    WriterMode,
)


class TopicWriter(Protocol):
    """Appends entries to one topic partition in send order. Each is stored at most
    once (the storage de-duplicates re-sends after reconnects) under this writer's
    name and its sequence id (0, 1, 2, ...: the n-th entry sent), which readers
    see: a write is recognised when it is read, even if its receipt was lost (a
    receipt only lets the follower count it without reading it back).

    A writer opened under a given name continues that name's numbering: its first
    entry gets `resumed_after + 1`, so the storage's de-duplication carries over
    from a previous holder of the name (another kop instance that owned the topic)."""

    @property
    def name(self) -> str: ...

    @property
    def epoch(self) -> int:
        """The topic's epoch this writer holds: it grows by one with every fencing
        writer, and is kept by the storage (the Kafka leader epoch of an owner).
        -1 for a shared writer."""
        ...

    @property
    def resumed_after(self) -> int:
        """The highest sequence id the storage had taken under this writer's name
        when it opened (-1: none). Such entries are, or will be, stored before
        any entry of this writer; a new owner reads that far before it serves."""
        ...

    def send_all(
        self, entries: Sequence[OutgoingEntry]
    ) -> tuple[WriteRef, asyncio.Future[list[StoredEntry | None]]]:
        """Enqueue `entries` without blocking; returns the first one's reference and a
        future that fails with StorageError if any of them failed, else gives each
        one as a reader will read it (`stored_as`), at the position the storage
        acknowledged, or None where it could not say (a re-send it de-duplicated).
        A refused send (queue full) refuses all of them: nothing is half-enqueued."""
        ...

    async def wait_capacity(self, size: int) -> None:
        """Returns once `size` more bytes (by `OutgoingEntry.size`) fit in the send queue
        (back-pressure); a `send_all` right after it, in the same step, is accepted."""
        ...

    def has_room(self, size: int) -> bool:
        """Whether `wait_capacity(size)` would return at once (no deadline needed)."""
        ...

    async def close(self) -> None:
        """Returns once every message sent before it was stored or failed."""
        ...


class TopicReader(Protocol):
    """A non-durable, in-order reader of one topic partition: it pins no data."""

    async def read(self) -> StoredEntry | Idle:
        """The next entry, or IDLE once after `report_idle()` when caught up."""
        ...

    def report_idle(self) -> None: ...

    async def close(self) -> None: ...


class MessageLog(Protocol):
    async def writer(
        self, topic: str, *, mode: WriterMode = WriterMode.SHARED, name: str | None = None
    ) -> TopicWriter:
        """The topic's writer, created on first use and shared until closed (a later
        call gets it whatever it asks). `name` (None: the storage picks a unique one)
        names its entries; `mode` FENCING fences every other writer of the topic,
        FENCING_SHARED too and then lets shared writers write beside it (it is fenced
        by the next FENCING or FENCING_SHARED writer), EXCLUSIVE raises WriterBusy
        while another writer holds it."""
        ...

    def open_writer(self, topic: str) -> TopicWriter | None:
        """The writer `writer` would give at once, if the topic has one open: a
        caller that writes thousands of times a second needs no deadline for it."""
        ...

    async def close_writer(self, topic: str, name: str | None = None) -> None:
        """Close the topic's writer (only if it is still the one named `name`)."""
        ...

    async def hand_over_writer(self, topic: str, name: str | None = None) -> None:
        """Let the topic's writer (only if it is still the one named `name`) go for
        another instance to take the topic: what it
        sent is stored or failed, it is forgotten here, and the storage drops it at
        the next fencing writer of the topic (or when this process's connection to
        the storage ends) rather than at once: on Pulsar, closing it while the next
        owner fences deadlocks the broker (`kop/pulsar/wire/producer.py`, `leave`)."""
        ...

    async def reader(
        self, topic: str, start: Position | None, *, compacted: bool = False, prefetch: int = 1000
    ) -> TopicReader:
        """A reader from the entry holding `start` (None: the earliest entry).
        If that entry is gone, it starts at the first stored entry after it.
        It reads at most about `prefetch` messages ahead of its consumer (and the
        storage may bound their bytes across all its readers): what an idle reader
        holds in memory."""
        ...

    async def earliest(self, topic: str) -> Position | None:
        """Its first stored entry (None: it holds none)."""
        ...

    async def end(self, topic: str) -> Position | None:
        """Its last stored entry (None: none)."""
        ...

    async def close(self) -> None: ...


class SharedSubscription(Protocol):
    """One consumer on a durable shared subscription (Pulsar's Shared type): the
    storage's dispatcher splits the entries among all consumers of the subscription,
    ours and others', and keeps each until acknowledged (D27)."""

    @property
    def epoch(self) -> int:
        """The current attachment's; deliveries of an earlier one were taken back."""
        ...

    async def receive(self) -> Delivered:
        """The next entry given to this consumer, waiting for it (StorageError once
        closed or failed for good)."""
        ...

    async def ack(self, deliveries: Sequence[Delivered]) -> None:
        """The entries are done with: once this returns, the storage has it, and no
        consumer gets them again. StaleDelivery if one came on a gone attachment
        (nothing is acknowledged then)."""
        ...

    def release(self, deliveries: Sequence[Delivered]) -> None:
        """Gives the entries back now: delivered again to any consumer, counted."""
        ...

    async def close(self) -> None:
        """What this consumer holds and did not acknowledge goes back."""
        ...


class SharedSubscriptions(Protocol):
    async def shared(self, topic: str, subscription: str, *, earliest: bool) -> SharedSubscription:
        """A consumer on `subscription` of the topic partition `topic`, creating the
        subscription at the first entry or at the end (`earliest`) if it is new."""
        ...


class MessageStore(MessageLog, SharedSubscriptions, Protocol):
    """What a backend hands the gateway: the log, and shared subscriptions on it."""


class Compaction(Protocol):
    """The storage's own topic compaction (Pulsar's), for compacted Kafka topics."""

    async def compact(self, topic: str) -> None:
        """Compact one topic partition up to (at least) its last entry now; returns
        once done. Readers with `compacted=True` then read, below the compaction's
        horizon, only each key's last message (a message with an empty payload
        deletes its key and goes too; a message without a key goes), each at its
        original position; an emptied batch slot stays in its batch, marked."""
        ...

    async def pin(self, topic: str, at: Position | None) -> None:
        """Keep every entry from `at` on (None: from the first stored entry) from
        being deleted by retention, until pinned elsewhere: a durable subscription."""
        ...


class StorageAdmin(Protocol):
    async def healthy(self) -> bool: ...

    async def topic_info(self, topic: PulsarTopic) -> TopicInfo | None: ...

    async def list_topics(self, ns: Namespace) -> dict[str, TopicInfo]: ...

    async def count_partitions(self, ns: Namespace) -> int:
        """Kafka partitions the namespace holds (a non-partitioned topic is one), its
        system topics aside; 0 for a namespace that does not exist."""
        ...

    async def serve_namespace(self, ns: Namespace) -> None:
        """Make `ns` fit for Kafka topics (exists, de-duplicates re-sends)."""
        ...

    async def create_partitioned(
        self, topic: PulsarTopic, partitions: int, properties: dict[str, str]
    ) -> None: ...

    async def update_partitions(self, topic: PulsarTopic, partitions: int) -> None: ...

    async def update_properties(self, topic: PulsarTopic, properties: dict[str, str]) -> None:
        """Set these topic properties (others are kept)."""
        ...

    async def stored_bytes(self, topic: str) -> int:
        """What the storage holds for one topic partition, in bytes."""
        ...

    async def message_size_limit(self) -> int:
        """The largest message (entry) the storage accepts, in bytes."""
        ...

    async def delete(self, topic: PulsarTopic, partitioned: bool) -> None: ...

    async def set_retention(
        self, topic: PulsarTopic, retention_ms: int, retention_bytes: int
    ) -> None: ...

    async def place_subscription(self, topic: str, name: str, at: Position | None) -> None:
        """Create or move durable subscription `name` on topic partition `topic` so
        the next message it delivers is the one at `at` (None: nothing stored yet,
        i.e. after the last message)."""
        ...

    async def create_subscription(self, topic: str, name: str, at: Position | None) -> bool:
        """Create durable subscription `name` on topic partition `topic` at `at` (None:
        after the last message) unless it exists; False when it did (left where it is)."""
        ...

    async def delete_subscription(self, topic: str, name: str) -> None:
        """Remove it if it exists."""
        ...

    async def subscriptions(self, topic: str) -> list[str]:
        """The names of the durable subscriptions on topic partition `topic` (none
        when it does not exist)."""
        ...

    async def cursor(self, topic: str, name: str) -> Cursor | None:
        """Where durable subscription `name` on topic partition `topic` stands (None:
        there is no such subscription)."""
        ...
