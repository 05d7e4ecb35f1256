"""The registry's records in a compacted system table, kept consistent across kop
instances without a leader.

A namespace's records live in one partition. An instance that changes a namespace
takes that partition with a fencing writer (kop.systables.held_topic), reads it to its
own barrier, decides on what it read (the next id, the next version) and writes; it
keeps the partition until another instance takes it, whose fence fails this one's
next write: that write is decided again on a fresh read. So no id or version is ever
handed out twice, whichever instance a client asks.

Reads are served from what this instance last read, read again when older than
`fresh_s` or when the asker needs what it has not seen (an id another instance just
handed out): a client that registered through one instance and looks the id up
through another finds it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from kop.registry.state import MalformedRecord, NamespaceState, Record, RegistryState
from kop.storage.port import MessageLog
from kop.storage.types import OutgoingMessage, StorageError
from kop.systables.held_topic import HeldPartitions

log = logging.getLogger(__name__)

T = TypeVar("T")
TOPIC = "kop-schema-registry"  # in the system namespace
PARTITIONS = 8  # fixed for good: a namespace's partition is a hash of its name
WRITE_ATTEMPTS = 4

# What a change decides on the namespace's state: the records to write, and its answer.
Decide = Callable[[NamespaceState], tuple[list[Record], T]]


class RegistryTable:
    def __init__(
        self, storage: MessageLog, topic: str, *, fresh_s: float = 1.0,
        write_timeout_s: float = 5.0,
    ) -> None:  # fmt: skip
        self._table = HeldPartitions(
            storage, topic, PARTITIONS, malformed=MalformedRecord, write_timeout_s=write_timeout_s
        )
        self._fresh_s = fresh_s
        self._states: dict[int, RegistryState] = {}
        self._read_at: dict[int, float] = {}
        self._held: set[int] = set()
        self._locks: dict[int, asyncio.Lock] = {}

    def _lock(self, partition: int) -> asyncio.Lock:
        return self._locks.setdefault(partition, asyncio.Lock())

    async def view(self, ns: str, fresh: bool = False) -> NamespaceState:
        """The namespace's state, read again if older than `fresh_s` (or `fresh`)."""
        partition = self._table.partition_for(ns)
        async with self._lock(partition):
            age = time.monotonic() - self._read_at.get(partition, -1e9)
            if fresh or age > self._fresh_s or partition not in self._states:
                await self._read(partition)
            return self._states[partition].of(ns)

    async def change(self, ns: str, decide: Decide[T]) -> T:
        """Decide on the namespace's current state and write what was decided; the
        decision's answer once it is stored. StorageError when it cannot be."""
        partition = self._table.partition_for(ns)
        delay = 0.05
        async with self._lock(partition):
            for attempt in range(1, WRITE_ATTEMPTS + 1):
                try:
                    if partition not in self._held:
                        await self._take(partition)
                    records, answer = decide(self._states[partition].of(ns))
                    await self._write(ns, partition, records)
                    return answer
                except StorageError as exc:
                    self._held.discard(partition)
                    await self._table.release(partition)
                    if attempt == WRITE_ATTEMPTS:
                        raise
                    log.info("schema registry write to %s: %s; again", ns, exc)
                await asyncio.sleep(delay * (1 + random.random()))  # writers apart
                delay *= 2
        raise AssertionError("unreachable")

    async def _take(self, partition: int) -> None:
        state = RegistryState()
        await self._table.load(partition, state.apply)
        self._states[partition] = state
        self._read_at[partition] = time.monotonic()
        self._held.add(partition)

    async def _read(self, partition: int) -> None:
        state = RegistryState()
        await self._table.read(partition, state.apply)
        self._states[partition] = state
        self._read_at[partition] = time.monotonic()

    async def _write(self, ns: str, partition: int, records: list[Record]) -> None:
        if not records:
            return
        messages = [OutgoingMessage(payload, {}, key, None) for key, payload in records]
        await self._table.write(ns, messages)
        state = self._states[partition]
        for key, payload in records:
            state.apply(key, payload)

    async def close(self) -> None:
        await self._table.close()
