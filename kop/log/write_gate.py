"""What an append must get past before anything is written: a writer that is not
retired and, when it is a new fence, the log read to its end (nothing more can land
from a writer it fenced, so what another instance stored is counted); and, for an
idempotent batch, a judgement that finds a sequence gap only in a log read to its
end (the gap is fatal to the client's producer)."""

from __future__ import annotations

import asyncio
import logging
import time

from kop.log.own_writes import OwnWrites
from kop.log.producer_state import Duplicate, InFlight, ProducerStates, Write
from kop.log.retirement import CaughtUp, Retirements
from kop.log.settings import LogSettings
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import BatchHeader
from kop.storage.port import MessageLog, TopicWriter
from kop.storage.types import WriterMode

Handle = asyncio.Future[int]

log = logging.getLogger(__name__)

OOOS_TOLD_EVERY_S = 10.0

_FENCES = frozenset({WriterMode.FENCING, WriterMode.FENCING_SHARED})  # read past the fence


class WriteGate:
    def __init__(
        self,
        storage: MessageLog,
        topic: str,
        own: OwnWrites,
        producers: ProducerStates[Handle],
        retirements: Retirements,
        caught_up: CaughtUp,
        settings: LogSettings,
    ) -> None:
        self._storage = storage
        self._topic = topic
        self._own = own
        self._producers = producers
        self._retirements = retirements
        self._caught_up = caught_up
        self._settings = settings
        self._read_past: str | None = None  # the fencing writer the log was read past
        self._tell_after = 0.0

    async def writer(self, mode: WriterMode) -> TopicWriter:
        """The topic's writer, never a retired one (its numbering is no longer trusted)."""
        retired = self._retirements.retired
        writer = self._storage.open_writer(self._topic)
        if (
            writer is not None
            and writer.name not in retired
            and (mode not in _FENCES or writer.name == self._read_past)
        ):  # as every write but the first finds it: nothing to wait for
            self._own.track(writer.name)
            return writer
        try:
            async with asyncio.timeout(self._settings.write_timeout_s):
                writer = await self._storage.writer(self._topic, mode=mode)
                while writer.name in retired:
                    await self._storage.close_writer(self._topic, writer.name)
                    writer = await self._storage.writer(self._topic, mode=mode)
                if mode in _FENCES and writer.name != self._read_past:
                    await self._read_to_end()
                    self._read_past = writer.name
        except TimeoutError:
            raise KafkaError(
                ErrorCode.request_timed_out, f"no writer for {self._topic} in time"
            ) from None
        self._own.track(writer.name)
        return writer

    async def decide(self, head: BatchHeader) -> Write | Duplicate | InFlight[Handle]:
        """`decide`, but a sequence gap only once the log is read to its end: an
        instance that was frozen or cut off while another served the partition has
        not yet counted that one's batches."""
        settings, topic = self._settings, self._topic
        try:
            return await decide(self._producers, self._retirements.settling, head, settings, topic)
        except KafkaError as exc:
            if exc.code is not ErrorCode.out_of_order_sequence_number:
                raise
        try:
            async with asyncio.timeout(settings.write_timeout_s):
                await self._read_to_end()
        except TimeoutError:
            raise KafkaError(ErrorCode.request_timed_out, f"{topic}: log not read") from None
        try:
            return await decide(self._producers, self._retirements.settling, head, settings, topic)
        except KafkaError as exc:
            now = time.monotonic()
            if exc.code is ErrorCode.out_of_order_sequence_number and now >= self._tell_after:
                # The client's producer bumps its epoch and re-numbers what it has in
                # flight on this answer: worth a line (one per partition every
                # OOOS_TOLD_EVERY_S) when a record shows up twice.
                self._tell_after = now + OOOS_TOLD_EVERY_S
                log.info(
                    "%s: sequence out of order, producer %d epoch %d sequence %d (%d records): %s",
                    topic, head.producer_id, head.producer_epoch, head.base_sequence,
                    head.record_count, exc.message,
                )  # fmt: skip
            raise

    async def _read_to_end(self) -> None:
        end = await self._storage.end(self._topic)
        if end is not None:
            await self._caught_up(end)


async def decide(
    producers: ProducerStates[Handle],
    settling: asyncio.Task[None] | None,
    head: BatchHeader,
    settings: LogSettings,
    topic: str,
) -> Write | Duplicate | InFlight[Handle]:
    """What to do with an idempotent batch. A retry of a batch whose write failed waits
    until that failure has settled (`settling`), so what the log holds of it is known
    before any of it is written again."""
    args = (head.producer_id, head.producer_epoch, head.base_sequence, head.record_count)
    decision = producers.check(*args)
    failed_before = isinstance(decision, Write) and producers.batch(
        head.producer_id, head.base_sequence, head.record_count
    )
    if failed_before and settling is not None:
        try:
            async with asyncio.timeout(settings.write_timeout_s):
                await asyncio.shield(settling)
        except TimeoutError:
            raise KafkaError(
                ErrorCode.request_timed_out, f"{topic}: a failed write has not settled"
            ) from None
        decision = producers.check(*args)
    return decision
