"""An in-memory partitioned message log implementing kop's storage port, with
Pulsar's behaviours and faults on command.

What it keeps from Pulsar: topics are ledgers of entries, stored as sent (one
message, or a batch in the batch layout: the same bytes Pulsar would hold);
ledger ids only grow; retention deletes whole ledgers from the oldest, never the
current one; a writer's entries are stored in send order, each at most once
(broker de-duplication), under its name and sequence id; readers are
non-durable, deliver whole entries, start at the entry holding a position, or at
the first stored entry after it when that entry is gone.

Writers hold a topic as Pulsar's producer access modes do (`WriterMode`): a new
exclusive or fencing writer raises the topic's epoch; a fencing one fails every
other writer for good (`WriterFenced`) after storing what the fenced writers had
already handed over (held sends), so all of theirs precedes all of its own (a
fencing-shared one too, and then shared writers may attach beside it); a
writer opened under a name continues that name's sequence ids. `instance()` is
another kop process's view of the same topics: its own writers, its own outage.

Faults, each armed for a topic and consumed by the next matching operation:
persist only k of the next send's entries (then every send queued behind it
fails, as a producer fails its pending queue), persist a send but lose its
receipt (it fails after the send timeout), acknowledge a send without saying
where it was stored (as Pulsar does for a re-send it de-duplicated),
re-deliver entries to open readers (a reconnect), make one view's readers lag,
roll the ledger, trim the oldest ledgers, stall a writer, a whole-store outage,
and hold a send back: it times out from the writer's view, but the storage
stores it later, when told (`release_held`), after whatever was stored
meanwhile (a broker that persisted a write after its client gave up, or one
writer's entries stored out of order). Time is the loop's:
use it under `tests.sim.clock.SimLoop`.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kop.storage import batch_layout
from kop.storage.types import (
    IDLE,
    Idle,
    OutgoingEntry,
    Position,
    StorageError,
    StoredEntry,
    StoredMessage,
    WriterBusy,
    WriteRef,
    WriterFenced,
    WriterMode,
    stored_as,
)
from tests.sim.memory_shared import MemoryShared, MemorySubscription

EPOCH_MS = 1_700_000_000_000
SEND_LATENCY_S = 0.002
SEND_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10.0


@dataclass
class _Ledger:
    id: int
    entries: list[StoredEntry] = field(default_factory=list)


@dataclass
class _Send:
    entries: Sequence[OutgoingEntry]
    first_seq: int
    future: asyncio.Future[list[StoredEntry | None]]
    persist: int  # how many of the entries get stored
    lose_receipt: bool
    hold: bool = False  # stored only on `release_held`; fails after the send timeout


class MemoryTopic:
    def __init__(self, store: MemoryLog, name: str) -> None:
        self.store = store
        self.name = name
        self.ledgers: list[_Ledger] = [_Ledger(store.next_ledger_id())]
        self._waiters: list[asyncio.Future[None]] = []
        self.readers: list[MemoryReader] = []
        self.observers: list[Callable[[StoredEntry], None]] = []  # see every append
        # armed faults
        self.persist_next: int | None = None
        self.lose_next_receipt = False
        self.forget_next_position = False
        self.hold_next = False
        # Held sends: (entries, producer, first sequence id), stored on `release_held`.
        self.held: list[tuple[Sequence[OutgoingEntry], str, int]] = []
        # Compaction (tests/sim/memory_compaction.py): the compacted ledger, the entry
        # key of its horizon, and the durable cursors (name -> first entry key kept).
        self.compacted: list[StoredEntry] = []
        self.horizon: tuple[int, int] | None = None
        self.cursors: dict[str, tuple[int, int]] = {}
        # Access modes: the epoch (-1: no exclusive writer yet), the writers attached,
        # and the highest sequence id stored under each name (de-duplication's state).
        self.epoch = -1
        self.attached: list[MemoryWriter] = []
        self.last_seq: dict[str, int] = {}
        self.shared: dict[str, MemorySubscription] = {}  # durable Shared subscriptions

    # -- storage ------------------------------------------------------------

    def append(
        self, entries: Sequence[OutgoingEntry], producer: str, first_seq: int
    ) -> list[StoredEntry]:
        ledger = self.ledgers[-1]
        now = int(asyncio.get_running_loop().time() * 1000) + EPOCH_MS
        stored = []
        for seq, out in enumerate(entries, first_seq):
            entry = stored_as(out, Position(ledger.id, len(ledger.entries)), producer, seq, now)
            self.last_seq[producer] = max(seq, self.last_seq.get(producer, -1))
            ledger.entries.append(entry)
            stored.append(entry)
            for observe in self.observers:
                observe(entry)
        self.wake()
        return stored

    def entries(self) -> list[StoredEntry]:
        return [entry for ledger in self.ledgers for entry in ledger.entries]

    def messages(self) -> list[StoredMessage]:
        return [m for entry in self.entries() for m in batch_layout.messages(entry)]

    def wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def changed(self) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        await fut

    def first_at_or_after(self, ledger_id: int, entry: int) -> tuple[int, int] | None:
        """(ledger index, entry index) of the first stored entry at or after."""
        for li, ledger in enumerate(self.ledgers):
            if ledger.id < ledger_id:
                continue
            start = entry if ledger.id == ledger_id else 0
            if start < len(ledger.entries):
                return li, start
        return None

    # -- faults -------------------------------------------------------------

    def roll(self) -> None:
        """Close the current ledger and open a new one (rollover, unload, restart)."""
        self.ledgers.append(_Ledger(self.store.next_ledger_id()))

    def trim(self, ledgers: int) -> int:
        """Delete up to `ledgers` of the oldest closed ledgers; returns how many went.
        A ledger holding an entry a durable cursor has not passed stays, as in Pulsar."""
        n = min(ledgers, len(self.ledgers) - 1)
        if self.cursors:
            keep_from = min(self.cursors.values())
            n = min(n, sum(1 for ledger in self.ledgers[:n] if _below(ledger, keep_from)))
        del self.ledgers[:n]
        return n

    def release_held(self, newest_first: bool = False) -> int:
        """Store the held sends now (oldest first, or newest first); returns how many."""
        held, self.held = self.held, []
        for entries, producer, first_seq in reversed(held) if newest_first else held:
            self.append(entries, producer, first_seq)
        return len(held)

    def redeliver(self, back: int) -> None:
        """Open readers re-deliver up to `back` entries they already delivered."""
        for reader in self.readers:
            reader.rewind(back)

    # -- access modes (Pulsar's AbstractTopic.incrementTopicEpochIfNeeded) ----------

    def attach(self, writer: MemoryWriter, mode: WriterMode) -> int:
        """Admit `writer`; returns the epoch it holds (-1: shared)."""
        exclusive = [w for w in self.attached if w.mode in _HOLDING]
        if mode is WriterMode.SHARED and exclusive:
            raise WriterBusy(f"{self.name} has an exclusive writer")
        if mode is WriterMode.EXCLUSIVE and self.attached:
            raise WriterBusy(f"{self.name} is held by {self.attached[0].name}")
        if mode in _FENCES:
            for other in list(self.attached):
                other.fence(f"{self.name} was taken over by a fencing writer")
            # What the fenced had handed over is stored before any entry of the new
            # writer, but after the new one was admitted (Pulsar does not wait for it):
            # a reader at the log's end right then does not see it yet.
            loop = asyncio.get_running_loop()
            loop.call_later(SEND_LATENCY_S / 2, self.release_held)
        self.attached.append(writer)
        if mode is WriterMode.SHARED:
            return -1
        self.epoch += 1
        return self.epoch

    def pushed(self, name: str) -> int:
        """The highest sequence id taken under `name`, stored or held (-1: none)."""
        held = [first + len(entries) - 1 for entries, producer, first in self.held
                if producer == name]  # fmt: skip
        return max([self.last_seq.get(name, -1), *held])

    def detach(self, writer: MemoryWriter) -> None:
        if writer in self.attached:
            self.attached.remove(writer)


# Writers that keep shared ones out while attached, and writers that take the topic.
_HOLDING = frozenset({WriterMode.EXCLUSIVE, WriterMode.FENCING})
_FENCES = frozenset({WriterMode.FENCING, WriterMode.FENCING_SHARED})


def _below(ledger: _Ledger, key: tuple[int, int]) -> bool:
    """Whether every entry of `ledger` comes before entry key `key`."""
    if ledger.id != key[0]:
        return ledger.id < key[0]
    return len(ledger.entries) <= key[1]


class MemoryWriter:
    _ids = itertools.count()

    def __init__(
        self,
        topic: MemoryTopic,
        view: MemoryLog,
        mode: WriterMode = WriterMode.SHARED,
        name: str | None = None,
    ) -> None:
        self._topic = topic
        self._view = view
        self._name = name or f"mem-{next(self._ids)}"
        self.mode = mode
        self._queue: deque[_Send] = deque()
        self._draining = False
        self._loop = asyncio.get_running_loop()
        self.stalled = False
        self.closed = False
        self.fenced: str | None = None  # why, once a fencing writer took the topic
        self._epoch = topic.attach(self, mode)  # stores what a fenced writer handed over
        self._resumed_after = topic.pushed(self._name) if name else -1
        self._sent = self._resumed_after + 1

    @property
    def name(self) -> str:
        return self._name

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def resumed_after(self) -> int:
        return self._resumed_after

    def lost(self) -> None:
        """Its process died: the storage drops it (Pulsar, with the connection); what
        it had not handed over yet is gone."""
        self.closed = True
        self._queue.clear()
        self._topic.detach(self)

    def fence(self, why: str) -> None:
        """Another writer took the topic: sends not yet stored fail, and all later ones."""
        self.fenced = why
        self._topic.detach(self)
        failed = list(self._queue)
        self._queue.clear()
        for send in failed:
            if not send.future.done():
                send.future.set_exception(WriterFenced(why))

    async def wait_capacity(self, size: int) -> None:
        while not self.has_room(size):
            await self._topic.changed()

    def has_room(self, size: int) -> bool:
        return not (self.stalled and len(self._queue) >= 8)

    def send_all(
        self, entries: Sequence[OutgoingEntry]
    ) -> tuple[WriteRef, asyncio.Future[list[StoredEntry | None]]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[StoredEntry | None]] = loop.create_future()
        first = (self._name, self._sent)
        self._sent += len(entries)
        if self.fenced is not None:
            future.set_exception(WriterFenced(self.fenced))
            return first, future
        if self.closed:
            future.set_exception(StorageError("writer is closed"))
            return first, future
        topic = self._topic
        persist = len(entries)
        if topic.persist_next is not None:
            persist, topic.persist_next = min(topic.persist_next, persist), None
        lose, topic.lose_next_receipt = topic.lose_next_receipt, False
        hold, topic.hold_next = topic.hold_next, False
        self._queue.append(_Send(entries, first[1], future, persist, lose, hold))
        self._schedule()
        return first, future

    def _schedule(self) -> None:
        if not self._draining and not self.stalled:
            self._draining = True
            self._loop.call_later(SEND_LATENCY_S, self._drain)

    def _drain(self) -> None:
        self._draining = False
        loop = self._loop
        while self._queue and not self.stalled:
            if self._view.down:
                failed = list(self._queue)
                self._queue.clear()
                loop.call_later(SEND_TIMEOUT_S, _fail_all, failed, "send timed out (outage)")
                return
            send = self._queue.popleft()
            if send.hold:
                self._topic.held.append((send.entries, self._name, send.first_seq))
                loop.call_later(SEND_TIMEOUT_S, _fail_all, [send], "held back, timed out")
                continue
            stored: list[StoredEntry | None] = []
            if send.persist:
                stored.extend(
                    self._topic.append(send.entries[: send.persist], self._name, send.first_seq)
                )
            if send.persist < len(send.entries):
                # A failure in the middle: this send and all queued behind it fail.
                failed = [send, *self._queue]
                self._queue.clear()
                _fail_all(failed, "persisted only part of the send")
                return
            if send.lose_receipt:
                loop.call_later(SEND_TIMEOUT_S, _fail_all, [send], "receipt lost, timed out")
            elif not send.future.done():
                if topic_forgets(self._topic):  # a re-send the storage de-duplicated
                    stored = [None] * len(stored)
                send.future.set_result(stored)

    def stall(self) -> None:
        self.stalled = True

    def unstall(self) -> None:
        self.stalled = False
        self._schedule()

    async def close(self) -> None:
        await self.leave()
        self._topic.detach(self)

    async def leave(self) -> None:
        self.closed = True
        self.stalled = False
        self._drain()  # pending sends are stored (or fail) before a close completes


def topic_forgets(topic: MemoryTopic) -> bool:
    forget, topic.forget_next_position = topic.forget_next_position, False
    return forget


def _fail_all(sends: list[_Send], why: str) -> None:
    for s in sends:
        if not s.future.done():
            s.future.set_exception(StorageError(why))


class MemoryReader:
    def __init__(
        self, topic: MemoryTopic, view: MemoryLog, start: Position | None, compacted: bool = False
    ) -> None:
        self._topic = topic
        self._view = view
        self._compacted = compacted
        # The next entry to deliver, as (ledger id, entry index).
        self._at = (0, 0) if start is None else (start.ledger, start.entry)
        self._idle_wanted = False
        self._delivered: deque[tuple[int, int]] = deque(maxlen=64)
        self.closed = False
        topic.readers.append(self)

    def report_idle(self) -> None:
        self._idle_wanted = True

    def rewind(self, back: int) -> None:
        if back > 0 and self._delivered:
            self._at = self._delivered[-min(back, len(self._delivered))]

    def _next(self) -> StoredEntry | None:
        horizon = self._topic.horizon
        if self._compacted and horizon is not None and self._at <= horizon:
            for e in self._topic.compacted:
                if e.position.entry_key >= self._at:
                    self._delivered.append(e.position.entry_key)
                    self._at = (e.position.ledger, e.position.entry + 1)
                    return e
            self._at = (horizon[0], horizon[1] + 1)
        found = self._topic.first_at_or_after(*self._at)
        if found is None:
            return None
        li, ei = found
        ledger = self._topic.ledgers[li]
        self._delivered.append((ledger.id, ei))
        self._at = (ledger.id, ei + 1)
        return ledger.entries[ei]

    async def read(self) -> StoredEntry | Idle:
        while True:
            if self.closed:
                raise StorageError("reader is closed")
            if self._view.down:
                await self._topic.changed()
                continue
            entry = self._next()
            if entry is not None:
                # A real reader hands over asynchronously, and may lag behind.
                await asyncio.sleep(self._view.read_lag_s)
                return entry
            if self._idle_wanted:
                self._idle_wanted = False
                return IDLE
            await self._topic.changed()

    async def close(self) -> None:
        self.closed = True
        if self in self._topic.readers:
            self._topic.readers.remove(self)


class MemoryLog:
    """The storage port's MessageLog, in memory."""

    def __init__(self, cluster: MemoryLog | None = None) -> None:
        self.topics: dict[str, MemoryTopic] = cluster.topics if cluster else {}
        self.writers: dict[str, MemoryWriter] = {}
        self.down = False  # this view cut off (for the store as a whole: `set_down`)
        self.read_lag_s = 0.0  # this view's readers deliver each entry this much later
        self._ledger_ids = cluster._ledger_ids if cluster else itertools.count(10)
        self._views: list[MemoryLog] = cluster._views if cluster else []
        self._views.append(self)
        # Readers created per topic: on Pulsar each is a subscription on the broker.
        self.readers_opened: Counter[str] = Counter()

    def instance(self) -> MemoryLog:
        """Another kop process's view of the same topics."""
        return MemoryLog(self)

    def next_ledger_id(self) -> int:
        return next(self._ledger_ids)

    def topic(self, name: str) -> MemoryTopic:
        if name not in self.topics:
            self.topics[name] = MemoryTopic(self, name)
        return self.topics[name]

    def set_down(self, down: bool) -> None:
        """An outage of the whole store: every instance's view."""
        for view in self._views:
            view.cut_off(down)

    def cut_off(self, down: bool) -> None:
        """This instance alone loses (or regains) the store."""
        self.down = down
        for topic in self.topics.values():
            topic.wake()
        if not down:
            for writer in self.writers.values():
                writer._schedule()

    async def _reachable(self, what: str) -> None:
        if self.down:
            await asyncio.sleep(CONNECT_TIMEOUT_S)
            raise StorageError(f"cannot {what}: storage unreachable")

    async def writer(
        self, topic: str, *, mode: WriterMode = WriterMode.SHARED, name: str | None = None
    ) -> MemoryWriter:
        existing = self.writers.get(topic)
        if existing is not None:
            return existing
        await self._reachable(f"create a writer on {topic}")
        if topic not in self.writers:
            self.writers[topic] = MemoryWriter(self.topic(topic), self, mode, name)
        return self.writers[topic]

    def open_writer(self, topic: str) -> MemoryWriter | None:
        return self.writers.get(topic)

    async def close_writer(self, topic: str, name: str | None = None) -> None:
        writer = self.writers.get(topic)
        if writer is None or (name is not None and writer.name != name):
            return
        del self.writers[topic]
        await writer.close()

    async def hand_over_writer(self, topic: str, name: str | None = None) -> None:
        """Stored what it sent, forgotten here, still attached to the topic until a
        fencing writer comes (or the process is lost), as on Pulsar."""
        writer = self.writers.get(topic)
        if writer is None or (name is not None and writer.name != name):
            return
        del self.writers[topic]
        await writer.leave()

    async def reader(
        self, topic: str, start: Position | None, *, compacted: bool = False, prefetch: int = 1000
    ) -> MemoryReader:
        await self._reachable(f"create a reader on {topic}")
        self.readers_opened[topic] += 1
        return MemoryReader(self.topic(topic), self, start, compacted)

    async def shared(self, topic: str, subscription: str, *, earliest: bool) -> MemoryShared:
        await self._reachable(f"subscribe to {topic}")
        t = self.topic(topic)
        if subscription not in t.shared:
            last = t.entries()[-1].position if t.entries() else None
            end = (last.ledger, last.entry + 1) if last is not None else (0, 0)
            t.shared[subscription] = MemorySubscription(t, (0, 0) if earliest else end)
        return MemoryShared(t.shared[subscription])

    async def earliest(self, topic: str) -> Position | None:
        await self._reachable(f"find where {topic} begins")
        entries = self.topic(topic).entries()
        return entries[0].position if entries else None

    async def end(self, topic: str) -> Position | None:
        await self._reachable(f"find where {topic} ends")
        entries = self.topic(topic).entries()
        return entries[-1].position if entries else None

    async def close(self) -> None:
        for name in list(self.writers):
            await self.close_writer(name)
