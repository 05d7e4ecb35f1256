"""Pulsar's topic compaction and durable cursors, for the in-memory log.

What it keeps from Pulsar's two-phase compactor (`AbstractTwoPhaseCompactor`,
`RawBatchConverter`) and its compacted-topic reads:
- the horizon is the topic's last entry when a compaction starts; what is below
  it is read from the previous compacted ledger and the live entries after the
  previous horizon;
- the key is the partition key; the last message of a key wins; a message with
  an empty payload deletes its key and is dropped itself; a message without a
  key is dropped (`topicCompactionRetainNullKey=false`, the default);
- a batch entry keeps its shape: a dropped message leaves an empty slot marked
  `compacted_out` (so batch indexes stay), and a batch left with no message is
  dropped; a single-message entry is kept or dropped whole;
- a reader with `compacted=True` reads compacted entries from its start up to
  the horizon, then the live entries after it;
- durable cursors (the `__compaction` one moves to the horizon, and kop's pin)
  keep retention from deleting a ledger holding an entry at or after them.

Faults on command: the next compaction of a topic fails (`fail_next`).
"""

from __future__ import annotations

import asyncio
import struct

from kop.storage import batch_layout
from kop.storage.proto.batch_layout_pb2 import KeyValue, SingleMessageMetadata
from kop.storage.types import Position, StorageError, StoredEntry, StoredMessage
from tests.sim.memory_log import MemoryLog, MemoryTopic

_SIZE = struct.Struct(">I")
COMPACTION_S = 0.05  # how long a compaction takes, in loop time
COMPACTION_CURSOR = "__compaction"

EntryKey = tuple[int, int]


def compact(topic: MemoryTopic) -> None:
    """One compaction of `topic` up to its last entry, as Pulsar does it."""
    live = topic.entries()
    if not live:
        return
    horizon = live[-1].position.entry_key
    old = topic.horizon
    source = [*topic.compacted, *(e for e in live if old is None or e.position.entry_key > old)]
    source = [e for e in source if e.position.entry_key <= horizon]
    latest: dict[str, tuple[int, int, int]] = {}
    for e in source:
        for m in batch_layout.messages(e):
            if not m.partition_key:
                continue
            if m.payload:
                latest[m.partition_key] = (m.position.ledger, m.position.entry, m.position.batch)
            else:
                latest.pop(m.partition_key, None)
    out: list[StoredEntry] = []
    for e in source:
        kept = _keep(e, latest)
        if kept is not None:
            out.append(kept)
    topic.compacted = out
    topic.horizon = horizon
    # The compaction cursor has everything up to the horizon acknowledged.
    topic.cursors[COMPACTION_CURSOR] = _after(topic, horizon)


def _keep(e: StoredEntry, latest: dict[str, tuple[int, int, int]]) -> StoredEntry | None:
    if e.message is not None:
        m = e.message
        ok = bool(m.partition_key) and latest.get(m.partition_key) == (*e.position.entry_key, -1)
        return e if ok else None
    messages = batch_layout.messages(e, compacted_out=True)
    if not messages:
        return e  # a layout Pulsar cannot parse is passed through whole
    data = bytearray()
    retained = 0
    for m in messages:
        if not m.compacted_out and m.partition_key and latest.get(m.partition_key) == m.position:
            data += _slot(m)
            retained += 1
        else:
            data += _empty_slot()
    if not retained:
        return None
    return StoredEntry(
        e.position, e.producer_name, e.sequence_id, e.publish_time, e.count, None,
        bytes(data), dict(e.properties),
    )  # fmt: skip


def _slot(m: StoredMessage) -> bytes:
    meta = SingleMessageMetadata(payload_size=len(m.payload), partition_key=m.partition_key)
    meta.properties.extend(KeyValue(key=k, value=v) for k, v in m.properties.items())
    if m.key_b64:
        meta.partition_key_b64_encoded = True
    if m.event_time > 0:
        meta.event_time = m.event_time
    if m.null_value:
        meta.null_value = True
    raw = meta.SerializeToString()
    return _SIZE.pack(len(raw)) + raw + m.payload


def _empty_slot() -> bytes:
    raw = SingleMessageMetadata(compacted_out=True, payload_size=0).SerializeToString()
    return _SIZE.pack(len(raw)) + raw


def _after(topic: MemoryTopic, key: EntryKey) -> EntryKey:
    """The entry key right after `key` (what a cursor at `key`, acknowledged, waits for)."""
    return (key[0], key[1] + 1)


class MemoryCompaction:
    """The storage port's `Compaction`, over a `MemoryLog`."""

    def __init__(self, log: MemoryLog) -> None:
        self._log = log
        self.fail_next: set[str] = set()
        self.runs = 0

    async def compact(self, topic: str) -> None:
        if self._log.down:
            raise StorageError("cannot compact: storage unreachable")
        await asyncio.sleep(COMPACTION_S)
        if topic in self.fail_next:
            self.fail_next.discard(topic)
            raise StorageError(f"compaction of {topic} failed (injected)")
        self.runs += 1
        compact(self._log.topic(topic))

    async def pin(self, topic: str, at: Position | None) -> None:
        if self._log.down:
            raise StorageError("cannot pin: storage unreachable")
        t = self._log.topic(topic)
        if at is None:
            entries = t.entries()
            key = entries[0].position.entry_key if entries else (0, 0)
        else:
            key = at.entry_key
        t.cursors["kop-compaction"] = key
