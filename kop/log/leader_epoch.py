"""Leader epochs (KIP-101, KIP-320) as kop has them.

A partition's epoch grows each time an instance takes it to serve it
(kop.cluster.epochs): a new owner, or the same one after a restart, as Kafka
elects a leader anew. Clients send the epoch their metadata names, and the owner
answers an older one with FENCED_LEADER_EPOCH and a newer one with
UNKNOWN_LEADER_EPOCH, so that they refresh metadata.

kop never truncates a log: what an owner acknowledged stays, whoever serves it
next. So every epoch ends at the log end, and OffsetForLeaderEpoch says so: a
consumer's check of its position never finds it truncated. The batches kop serves
carry epoch 0 (`BATCH_EPOCH`): kop does not record the epoch a batch was written
in, and no answer depends on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kop.protocol.batch_epochs import BATCH_EPOCH, NO_EPOCH
from kop.protocol.errors import ErrorCode, KafkaError


class EpochSource(Protocol):
    def of(self, partition: str, leader: str) -> int:
        """The epoch the instance (process) `leader` leads the partition in, as this
        instance last heard it."""
        ...

    async def take(self, partition: str) -> int:
        """The partition's next epoch, persisted: the caller now leads it."""
        ...

    async def forget(self, partitions: Sequence[str]) -> None:
        """Their topic is deleted; one made again under its name starts afresh."""
        ...


class FirstEpoch:
    """Epoch 0 for good: for a log that no other instance ever serves (tests of the log)."""

    def of(self, partition: str, leader: str) -> int:
        return BATCH_EPOCH

    async def take(self, partition: str) -> int:
        return BATCH_EPOCH

    async def forget(self, partitions: Sequence[str]) -> None:
        return None


def check_current(current: int, epoch: int) -> None:
    """A client's `current_leader_epoch` (-1: none) against the leader's, as Kafka
    checks it: older is fenced, newer is metadata this leader has not seen."""
    if current in (NO_EPOCH, epoch):
        return
    if current < epoch:
        raise KafkaError(ErrorCode.fenced_leader_epoch, f"leader epoch {current} < {epoch}")
    raise KafkaError(ErrorCode.unknown_leader_epoch, f"leader epoch {current} > {epoch}")


def end_offset_for(requested: int, log_start: int, log_end: int, epoch: int) -> tuple[int, int]:
    """(epoch, end offset) for OffsetForLeaderEpoch: the current epoch and every
    older one end at the log end (kop never truncates); a newer or undefined one
    is unknown (-1, -1); one below the first (0) ends where the first starts, at
    the log start: all as Kafka's epoch cache answers."""
    if requested == NO_EPOCH or requested > epoch:
        return NO_EPOCH, -1
    if requested < 0:
        return requested, log_start
    return requested, log_end
