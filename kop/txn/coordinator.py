"""The transaction coordinator of the transaction state partitions this instance
owns: the rules of `state` made durable through `store`, and the markers written.

Each request is decided by the rules, the change persisted, then applied and
answered (an unpersisted change is abandoned: the old state stands, and the client
retries on COORDINATOR_NOT_AVAILABLE). Ending a transaction is answered once its
PREPARE_COMMIT or PREPARE_ABORT is durable, as Kafka does; the markers are then
written in the background, retried until they are, and only then is the end
completed, so a crash in between is finished by the next owner (`load`).

A request for a transactional id whose last end is still being written waits for
that end (up to `ENDING_WAIT_S`) before it is decided, instead of being answered
CONCURRENT_TRANSACTIONS at once. librdkafka takes an AddPartitionsToTxn answered so
as possibly taken, and its `abort_transaction()` then sends an EndTxn(ABORT) that
meets the commit before it: INVALID_TXN_STATE, fatal to the producer. Kafka's
brokers write markers in about a millisecond, Pulsar in tens, so the window that is
rare on Kafka is common on kop (`tests/gateway/test_txn_abort_after_commit.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Protocol

from kop.protocol.control import Marker
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.types import StorageError
from kop.txn.id_room import IdRoom, TxnLimits
from kop.txn.peers import CoordinatorFenced
from kop.txn.requests import Transactions
from kop.txn.state import Decision, Partition, State, TxnMeta
from kop.txn.store import TxnStore

log = logging.getLogger(__name__)

MAX_COORDINATOR_EPOCH = 2**31 - 1  # WriteTxnMarkers carries it as an int32
RETRY_S = (0.1, 5.0)  # markers and completions are retried, backing off between these
ENDING_WAIT_S = 5.0  # the longest a request waits for its id's last end to be written


class MarkerWriter(Protocol):
    async def write(self, partitions: frozenset[Partition], marker: Marker) -> None:
        """Every partition holds the marker when this returns; raises otherwise (a
        partition that no longer exists counts as written)."""
        ...


class TxnCoordinator:
    def __init__(
        self, store: TxnStore, markers: MarkerWriter, max_timeout_ms: int,
        new_id: Callable[[], int], now_ms: Callable[[], int], limits: TxnLimits | None = None,
        ending_wait_s: float = ENDING_WAIT_S,
    ) -> None:  # fmt: skip
        self.limits = limits or TxnLimits()
        self._ids = IdRoom(self.limits)
        self._store = store
        self._markers = markers
        self._max_timeout_ms = max_timeout_ms
        self._new_id = new_id
        self.now_ms = now_ms
        self._partitions: dict[int, Transactions] = {}
        # Each loaded partition's coordinator epoch: the topic epoch this instance took
        # it with, grown by every takeover and kept by the storage. Its markers carry
        # it, and a partition that has seen a later one refuses them.
        self._epochs: dict[int, int] = {}
        self._ending: dict[str, asyncio.Task[None]] = {}
        self._ending_wait_s = ending_wait_s

    def owns(self, txn_id: str) -> bool:
        return self._store.partition_for(txn_id) in self._partitions

    async def load(self, partition: int) -> None:
        """Take the partition and finish what its last owner left unfinished."""
        metas = await self._store.load(partition)
        tx = Transactions(self._max_timeout_ms, self.limits.default_tenant)
        now = self.now_ms()  # a record older than `updated_ms` ages from its load
        decisions = tx.recover(m if m.updated_ms >= 0 else replace(m, updated_ms=now)
                               for m in metas.values())  # fmt: skip
        self._partitions[partition] = tx
        self._epochs[partition] = min(max(self._store.epoch(partition), 0), MAX_COORDINATOR_EPOCH)
        for d in decisions:  # a prepared end written again is the same record
            await self._settle(tx, d)
        log.info(
            "transaction state partition %d loaded: %d transactional ids, %d unfinished "
            "transactions being ended", partition, len(metas), len(decisions),
        )  # fmt: skip

    async def unload(self, partition: int) -> None:
        tx = self._partitions.pop(partition, None)
        self._epochs.pop(partition, None)
        if tx is None:
            return
        for txn_id in list(tx.metas):
            task = self._ending.pop(txn_id, None)
            if task is not None:
                task.cancel()
        await self._store.release(partition)

    def metas(self) -> list[TxnMeta]:
        """Every transactional id of the loaded partitions (ListTransactions)."""
        return [m for tx in self._partitions.values() for m in tx.metas.values()]

    def meta(self, txn_id: str) -> TxnMeta | None:
        tx = self._partitions.get(self._store.partition_for(txn_id))
        return None if tx is None else tx.metas.get(txn_id)

    def verify(self, txn_id: str, producer_id: int, epoch: int, part: Partition) -> ErrorCode:
        """Whether the producer's ongoing transaction holds `part` (KIP-890's
        verification): NONE, INVALID_PRODUCER_EPOCH for a fenced producer,
        INVALID_TXN_STATE otherwise."""
        meta = self.meta(txn_id)
        if meta is not None and meta.producer_id == producer_id and meta.epoch > epoch:
            return ErrorCode.invalid_producer_epoch
        if (
            meta is None or meta.state is not State.ONGOING or part not in meta.partitions
            or (meta.producer_id, meta.epoch) != (producer_id, epoch)
        ):  # fmt: skip
            return ErrorCode.invalid_txn_state
        return ErrorCode.none

    async def init_producer_id(
        self, txn_id: str, timeout_ms: int, expected: tuple[int, int] | None = None
    ) -> tuple[ErrorCode, int, int]:
        await self._last_end_written(txn_id)
        tx = self._owner(txn_id)
        if tx is None:
            return ErrorCode.not_coordinator, -1, -1
        if txn_id not in tx.metas and self._ids.full(txn_id, self._partitions.values()):
            return ErrorCode.coordinator_not_available, -1, -1
        try:
            decision = tx.init(txn_id, timeout_ms, self._new_id, expected)
        except KafkaError as exc:  # no producer id ready (the next block is on its way)
            return exc.code, -1, -1
        error = await self._settle(tx, decision)
        meta = tx.metas.get(txn_id)
        if error is not ErrorCode.none or meta is None:
            return error, -1, -1
        return error, meta.producer_id, meta.epoch

    async def add_partitions(
        self, txn_id: str, producer_id: int, epoch: int, parts: Iterable[Partition],
        version: int = 1,
    ) -> ErrorCode:  # fmt: skip
        await self._last_end_written(txn_id)
        tx = self._owner(txn_id)
        if tx is None:
            return ErrorCode.not_coordinator
        d = tx.add(txn_id, producer_id, epoch, parts, self.now_ms(), version)
        return await self._settle(tx, d)

    async def end_txn(
        self, txn_id: str, producer_id: int, epoch: int, commit: bool, version: int = 1
    ) -> tuple[ErrorCode, int, int]:
        """The answer, and the producer id and epoch to go on with (version 2 bumps
        the epoch at every end; -1, -1 with an error)."""
        await self._last_end_written(txn_id)
        tx = self._owner(txn_id)
        if tx is None:
            return ErrorCode.not_coordinator, -1, -1
        try:
            d = tx.end(txn_id, producer_id, epoch, commit, version, self._new_id)
        except KafkaError as exc:  # past the last epoch, and no producer id ready
            return exc.code, -1, -1
        error = await self._settle(tx, d)
        meta = tx.metas.get(txn_id)
        if error is not ErrorCode.none or meta is None:
            return error, -1, -1
        return error, *meta.ids

    async def expire(self) -> None:
        """Abort (and fence) every ongoing transaction past its timeout; once per
        cleanup interval, forget the ids finished longer than their expiration."""
        for tx in list(self._partitions.values()):
            for d in tx.expired(self.now_ms()):
                if d.write is not None:
                    log.info("transaction of %s timed out: aborting it", d.write.txn_id)
                await self._settle(tx, d)
        await self._ids.forget_idle(self.now_ms(), self._partitions.values(), self._store)

    async def close(self) -> None:
        for partition in list(self._partitions):
            await self.unload(partition)

    async def _last_end_written(self, txn_id: str) -> None:
        """Wait, bounded, for the markers and completion of `txn_id`'s last end (see
        the module's docstring); past the bound the rules answer as they would."""
        task = self._ending.get(txn_id)
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=self._ending_wait_s)

    def _owner(self, txn_id: str) -> Transactions | None:
        return self._partitions.get(self._store.partition_for(txn_id))

    async def _settle(self, tx: Transactions, d: Decision) -> ErrorCode:
        """Persist the decided change, apply it, start its markers; the answer."""
        if d.write is None:
            return d.error
        meta = replace(d.write, updated_ms=self.now_ms())
        try:
            await self._store.write(meta)
        except StorageError as exc:
            log.warning("transaction state of %s not persisted: %s", meta.txn_id, exc)
            tx.abandon(meta.txn_id)
            return ErrorCode.coordinator_not_available
        tx.apply(meta)
        if meta.state.preparing:
            self._finish(tx, meta, d.markers)
        return d.error

    def _finish(self, tx: Transactions, meta: TxnMeta, parts: frozenset[Partition]) -> None:
        epoch = self._epochs.get(self._store.partition_for(meta.txn_id), 0)
        marker = Marker(meta.committing, meta.producer_id, meta.epoch, coordinator_epoch=epoch)
        task = asyncio.ensure_future(self._end(tx, meta.txn_id, parts, marker))
        self._ending[meta.txn_id] = task
        task.add_done_callback(lambda _t: self._ending.pop(meta.txn_id, None))

    async def _end(
        self, tx: Transactions, txn_id: str, parts: frozenset[Partition], marker: Marker
    ) -> None:
        delay = RETRY_S[0]
        while True:
            try:
                await self._markers.write(parts, marker)
                done = tx.complete(txn_id).write
                assert done is not None
                done = replace(done, updated_ms=self.now_ms())
                await self._store.write(done)
                tx.apply(done)
                return
            except CoordinatorFenced as exc:  # a later coordinator owns the partition now
                log.warning("ending the transaction of %s: %s; this coordinator stops", txn_id, exc)
                return
            except (StorageError, OSError) as exc:
                log.warning("ending the transaction of %s: %s; again in %.1fs", txn_id, exc, delay)
            except Exception:  # never left preparing: its producer and LSO would wait forever
                log.exception("ending the transaction of %s; again in %.1fs", txn_id, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_S[1])
