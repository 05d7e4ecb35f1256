"""Produce into one partition: idempotence checks, encoding, sends (how each batch is
answered: kop/log/append_completion.py).

`begin_append` runs in the connection's ordered part (so a connection's writes
reach Pulsar in the order sent) and returns a future owned by the log, not by the
connection: a write completes, and its idempotence handle resolves, even if the
connection that sent it has gone. A write completes when the tail follower has
counted its last entry (its offset is then the one every reader computes);
a failed send or `write_timeout_s` without it fails the write with a retriable
error and retires the writer, whose numbering no longer names its entries.

Retrying a batch that failed waits until that failure has settled (the retired
writer closed, the follower caught up with the log's end), so what the log
holds of the batch is known and only the missing records are written.

The writer fences the partition (Pulsar's ExclusiveWithFencing, docs/decisions.md
D15) unless the topic leaves room for Pulsar producers: once another instance took
it over, this one's writes fail NOT_LEADER_OR_FOLLOWER, and the appender is done
(`fenced`): writing again would fence the new owner in turn.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from kop.aio.futures import retrieve
from kop.entries import codec as entries
from kop.entries.formats import EntryFormat
from kop.log.append_completion import Completion, Job, fail_observed
from kop.log.framing import AGAIN_AFTER_S, TopicFraming
from kop.log.own_writes import OwnWrites
from kop.log.producer_state import Duplicate, InFlight, ProducerStates, Write
from kop.log.receipts import ReceiptFeed
from kop.log.retirement import CaughtUp, Retirements
from kop.log.settings import LogSettings
from kop.log.write_gate import Handle, WriteGate
from kop.protocol.control import read_marker
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import BatchHeader
from kop.storage.port import MessageLog, TopicWriter
from kop.storage.types import OutgoingEntry, StorageError, StoredEntry, WriterMode

log = logging.getLogger(__name__)

# A batch of more records than this is encoded off the event loop when that takes
# work per record (docs/decisions.md D3: inline it costs up to ~1 ms with kop_native,
# ~50 ms without; a thread hop costs ~0.05 ms).
OFFLOAD_RECORDS = 4096


async def _encode(
    s: LogSettings,
    head: BatchHeader,
    batch: bytes,
    fmt: EntryFormat,
    batching: bool,
    first: int,
    versions: entries.Versions | None = None,
    unknown: set[int] | None = None,
) -> list[OutgoingEntry]:
    """The batch's entries; on a worker thread when that takes work per record for
    many records (a batch may decompress to `max_uncompressed_batch_bytes` of
    records of a few bytes each: over 2 million), so the event loop goes on serving
    everyone else meanwhile (it gets the GIL back every few ms)."""
    args = (head, batch, fmt, batching, first, s.max_entry_bytes)
    encode = functools.partial(
        entries.encode, *args, s.max_uncompressed_batch_bytes, versions=versions, unknown=unknown
    )
    per_record = fmt is EntryFormat.PULSAR or head.compression
    if per_record and head.record_count > OFFLOAD_RECORDS:
        return await asyncio.to_thread(encode)
    return encode()


class Appender:
    def __init__(
        self,
        storage: MessageLog,
        topic: str,
        own: OwnWrites,
        producers: ProducerStates[Handle],
        caught_up: CaughtUp,
        settings: LogSettings,
        receipts: ReceiptFeed,
        framing: TopicFraming | None = None,
    ) -> None:
        self._storage = storage
        self._framing = framing
        self._receipts = receipts
        self._topic = topic
        self._own = own
        self._producers = producers
        self._settings = settings
        self._lock = asyncio.Lock()
        self._completing: set[asyncio.Future[int]] = set()
        self._retirements = Retirements(storage, topic, own, caught_up, settings.write_timeout_s)
        self._retired = self._retirements.retired
        self._gate = WriteGate(
            storage, topic, own, producers, self._retirements, caught_up, settings
        )
        self._completion = Completion(topic, producers, settings.write_timeout_s,
                                      self._fence, self.retire)  # fmt: skip
        self.closed = False
        self.fenced = False  # another instance took the partition over
        self._mode = WriterMode.FENCING

    async def begin_append(
        self,
        batches: list[tuple[BatchHeader, bytes]],
        fmt: EntryFormat,
        batching: bool = True,
        *,
        shared: bool = False,
    ) -> asyncio.Future[int]:
        if self.closed:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{self._topic} is closed")
        # Encode before touching any state: a corrupt batch leaves nothing behind.
        versions = None
        if self._framing is not None and fmt is EntryFormat.PULSAR:
            versions = await self._framing.for_produce()
        encoded = [
            (h, b, await self._encoded(h, b, fmt, batching, 0, versions)) for h, b in batches
        ]
        if self.closed:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{self._topic} is closed")
        async with self._lock:
            try:
                writer = await self._writer(
                    WriterMode.FENCING_SHARED if shared else WriterMode.FENCING
                )
            except (KafkaError, StorageError):
                for h, _, _ in encoded:
                    self._refuse(h)
                raise
            jobs = [
                await self._plan(writer, h, b, first, fmt, batching, versions)
                for h, b, first in encoded
            ]
        done = self._completion.complete(jobs)
        self._completing.add(done)
        done.add_done_callback(self._completing.discard)
        done.add_done_callback(retrieve)  # its connection may be gone
        return done

    async def _encoded(
        self, head: BatchHeader, batch: bytes, fmt: EntryFormat, batching: bool, first: int,
        versions: entries.Versions | None,
    ) -> list[OutgoingEntry]:  # fmt: skip
        """The batch's entries, values in Confluent's framing stored bare where their id
        is a version of the topic's schema; an id not known yet is asked for once (a
        serializer registers its schema just before its first record)."""
        if versions is None or self._framing is None:
            return await _encode(self._settings, head, batch, fmt, batching, first)
        missed: set[int] = set()
        out = await _encode(self._settings, head, batch, fmt, batching, first, versions, missed)
        if missed:
            await self._framing.learn(unless_within=AGAIN_AFTER_S, fresh=True)
            if any(self._framing.version(sid) is not None for sid in missed):
                now = self._framing.versions
                out = await _encode(self._settings, head, batch, fmt, batching, first, now)
        return out

    def _refuse(self, head: BatchHeader) -> None:
        """An idempotent batch that would be written failed before it was sent: its
        producer's later batches must wait for its retry (`ProducerStates.refused`)."""
        if head.producer_id < 0 or head.base_sequence < 0:
            return
        args = (head.producer_id, head.producer_epoch, head.base_sequence, head.record_count)
        try:
            decision = self._producers.check(*args)
        except KafkaError:
            return  # fenced or out of order: it would not have been written
        if isinstance(decision, Write):
            self._producers.refused(*args)

    async def _writer(self, mode: WriterMode = WriterMode.FENCING) -> TopicWriter:
        self._mode = mode
        return await self._gate.writer(mode)

    async def _plan(
        self,
        writer: TopicWriter,
        head: BatchHeader,
        batch: bytes,
        whole: list[OutgoingEntry],
        fmt: EntryFormat,
        batching: bool,
        versions: entries.Versions | None = None,
    ) -> Job:
        job = Job(head)
        if head.is_control and head.producer_id >= 0:
            marker = read_marker(batch)
            if marker is not None:
                self._producers.check_marker(
                    marker.producer_id, marker.producer_epoch, marker.coordinator_epoch
                )
        if job.idempotent:
            decision = await self._gate.decide(head)
            if isinstance(decision, Duplicate):
                job.offset = decision.base_offset
                return job
            if isinstance(decision, InFlight):
                job.wait = decision.handle
                return job
            job.first_index = decision.first_index
        out = whole
        if job.first_index:
            out = await self._encoded(head, batch, fmt, batching, job.first_index, versions)
        size = sum(e.size for e in out)
        if not writer.has_room(size) or writer.name in self._retired:
            writer = await self._room(writer, head, size)
        ref, acked = writer.send_all(out)  # in the same step as the room was found
        acked.add_done_callback(self._acked)
        job.writer, job.acked = ref[0], acked
        job.observed = self._own.expect(ref[0], ref[1], len(out))
        acked.add_done_callback(functools.partial(fail_observed, job.observed))
        if job.idempotent:
            job.handle = asyncio.get_running_loop().create_future()
            job.handle.add_done_callback(retrieve)
            self._producers.begin(
                head.producer_id, head.producer_epoch, head.base_sequence, head.record_count,
                job.handle,
            )  # fmt: skip
        return job

    async def _room(self, writer: TopicWriter, head: BatchHeader, size: int) -> TopicWriter:
        """A writer not retired with room for `size` bytes, within `write_timeout_s`
        (back-pressure: Pulsar is slower than the clients)."""
        try:
            async with asyncio.timeout(self._settings.write_timeout_s):
                await writer.wait_capacity(size)
                while writer.name in self._retired:  # retired while this request waited
                    writer = await self._writer(self._mode)
                    await writer.wait_capacity(size)
        except (TimeoutError, KafkaError, StorageError) as exc:
            self._refuse(head)
            if not isinstance(exc, TimeoutError):
                raise
            raise KafkaError(
                ErrorCode.request_timed_out, f"{self._topic}: Pulsar is not taking writes"
            ) from None
        return writer

    def _acked(self, acked: asyncio.Future[list[StoredEntry | None]]) -> None:
        if acked.cancelled() or acked.exception() is not None:
            self._receipts.failed()
        else:
            self._receipts.put(acked.result())

    def retire(self, writer: str, why: str) -> None:
        self._retirements.retire(writer, why)

    def _fence(self, why: str) -> None:
        if not self.fenced:
            log.warning("%s: taken over by another instance (%s)", self._topic, why)
        self.fenced = self.closed = True

    def gap(self) -> None:
        self._retirements.gap()

    async def close(self) -> None:
        """No new writes; those in flight finish first, within `write_timeout_s`. A
        write Pulsar took before another instance's fence is stored and acknowledged
        (F2 of docs/design/several-instances.md): answered with an error here, its
        client would retry at the new owner, which may judge the retry before it has
        counted the original, and store it twice (D15's handover window)."""
        self.closed = True
        if self._completing:
            await asyncio.wait(list(self._completing), timeout=self._settings.write_timeout_s)
        for done in list(self._completing):
            done.cancel()
        self._retirements.cancel()
