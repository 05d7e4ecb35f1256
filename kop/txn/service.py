"""The transaction coordinator as a service: the coordinator of the transaction
state partitions this instance owns, loaded and unloaded as ownership moves
(kop.cluster.coordinated), with the loop that aborts transactions past their
timeout. A transactional id of a partition owned elsewhere gets NOT_COORDINATOR;
one of a partition still being read back gets COORDINATOR_LOAD_IN_PROGRESS."""

from __future__ import annotations

import asyncio
import logging

from kop.aio.futures import cancel_and_wait
from kop.cluster.coordinated import CoordinatedPartitions
from kop.cluster.ownership import Ownership
from kop.groups.scope import GroupScope
from kop.protocol.errors import ErrorCode
from kop.txn.coordinator import TxnCoordinator
from kop.txn.peers import Peers
from kop.txn.state import Partition
from kop.txn.store import TxnStore

log = logging.getLogger(__name__)
# An implicit add that meets the end of the producer's previous transaction still
# being completed is tried again for this long, as Kafka's brokers do
# (add.partitions.to.txn.retry.backoff.ms, .max.ms), before the write is answered.
CONCURRENT_RETRY_S = (0.02, 0.1)


class TxnService:
    def __init__(
        self, store: TxnStore, coordinator: TxnCoordinator, ownership: Ownership,
        abort_check_s: float, scope: GroupScope, peers: Peers | None = None,
        version: int = 2,
    ) -> None:  # fmt: skip
        # the transaction version finalized in ApiVersions (2: KIP-890 part 2)
        self.version = version
        self._peers = peers  # how a write is verified where another instance coordinates
        # whose each transactional id is: a tenant's own, keyed as its groups are
        self.scope = scope
        self.coordinator = coordinator
        self._store = store
        self._ownership = ownership
        self._abort_check_s = abort_check_s
        self.partitions = CoordinatedPartitions(
            store.partitions, store.partition_topic, coordinator.load, coordinator.unload,
            what="transaction state partition",
        )  # fmt: skip
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self.partitions.follow(self._ownership), name="txn-partitions"),
            asyncio.create_task(self._abort_timed_out(), name="txn-timeouts"),
        ]

    async def close(self) -> None:
        for task in self._tasks:
            await cancel_and_wait(task)
        await self.coordinator.close()
        await self._store.close()
        if self._peers is not None:
            await self._peers.close()

    def partition_of(self, txn_id: str) -> int:
        return self._store.partition_for(txn_id)

    def partition_topic(self, partition: int) -> str:
        return self._store.partition_topic(partition)

    def check(self, txn_id: str) -> None:
        """Raise NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS unless this instance
        coordinates the transactional id now."""
        self.partitions.check(self.partition_of(txn_id))

    async def admit(
        self, txn_id: str, producer_id: int, epoch: int, part: Partition, *, add: bool
    ) -> ErrorCode:
        """Whether a transactional write into `part` (a produced batch, a
        TxnOffsetCommit) may go in, by the coordinator of the id, here or at the
        instance that coordinates it (kop.txn.peers): KIP-890's verification that the
        producer's ongoing transaction holds `part`, or, with `add` (transaction
        version 2's Produce v12 and TxnOffsetCommit v5), its implicit add, made
        durable there. NONE, or the error the write gets; COORDINATOR_LOAD_IN_PROGRESS
        while the id's partition loads here (a write of a transaction that recovery is
        about to abort must wait for that). An add that meets the end of the
        producer's previous transaction still completing is tried again for a while."""
        waited, step = 0.0, CONCURRENT_RETRY_S[0]
        while True:
            code = await self._at_coordinator(txn_id, producer_id, epoch, part, verify_only=not add)
            if code is not ErrorCode.concurrent_transactions or waited >= CONCURRENT_RETRY_S[1]:
                return code
            await asyncio.sleep(step)
            waited += step

    async def _at_coordinator(
        self, txn_id: str, producer_id: int, epoch: int, part: Partition, *, verify_only: bool
    ) -> ErrorCode:
        partition = self.partition_of(txn_id)
        if self.partitions.coordinates(partition):
            if verify_only:
                return self.coordinator.verify(txn_id, producer_id, epoch, part)
            return await self.coordinator.add_partitions(txn_id, producer_id, epoch, [part], 2)
        if not self.partitions.elsewhere(partition):
            return ErrorCode.coordinator_load_in_progress
        owner = self._ownership.owner(self.partition_topic(partition))
        if owner is None or self._peers is None:
            return ErrorCode.coordinator_not_available
        return await self._peers.add_partition(
            owner, txn_id, producer_id, epoch, part, verify_only=verify_only
        )

    async def _abort_timed_out(self) -> None:
        """Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms loop."""
        while True:
            await asyncio.sleep(self._abort_check_s)
            try:
                await self.coordinator.expire()
            except Exception:  # the next round tries again; the loop must not die
                log.exception("aborting timed-out transactions")
