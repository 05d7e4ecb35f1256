"""KIP-890's verification of a transactional write, as the produce path asks it.

A transactional batch goes only into a partition its producer's ongoing transaction
holds (by the coordinator of the id, here or at another instance): a late write of an
ended transaction would otherwise open one that no marker ever closes. Under
transaction version 2 (`add`) the coordinator adds the partition instead. Asked once
per transaction and partition, as Kafka asks: while the producer has a transaction of
this epoch open in the partition, its batches belong to it (version 2 bumps the epoch
at every end: a batch of the next transaction is asked about while the last one's
marker is on its way).

A rule of transactions, not of the Produce API: the handler only says which batch goes
where (kop/api/produce.py).
"""

from __future__ import annotations

from kop.log.partition_log import PartitionLog
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import BatchHeader
from kop.txn.service import TxnService
from kop.txn.state import Partition

# What a coordinator that cannot answer now means for the write: retriable, as Kafka
# answers it (the producer sends the batch again).
_NOT_NOW = frozenset({
    ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator, ErrorCode.concurrent_transactions,
})  # fmt: skip


async def verify_write(
    txns: TxnService, head: BatchHeader, txn: str, part: Partition, plog: PartitionLog,
    *, add: bool,
) -> None:  # fmt: skip
    """Raise the error the batch gets unless it may go in: a coordinator loading, out of
    reach or still ending the producer's previous transaction, NOT_ENOUGH_REPLICAS
    (retriable); a fenced producer, INVALID_PRODUCER_EPOCH; anything else as the
    coordinator answered."""
    if not head.is_transactional:
        return
    pid, epoch = head.producer_id, head.producer_epoch
    if plog.txns.is_open(pid) and plog.producers.epoch(pid) == epoch:
        return
    code = await txns.admit(txn, pid, epoch, part, add=add)
    if code in _NOT_NOW:
        raise KafkaError(ErrorCode.not_enough_replicas, f"transaction coordinator: {code.name}")
    if code is ErrorCode.producer_fenced:
        raise KafkaError(ErrorCode.invalid_producer_epoch, f"producer {pid} is fenced")
    if code is not ErrorCode.none:
        raise KafkaError(code, f"{part[0]}: not in an ongoing transaction of this producer")
