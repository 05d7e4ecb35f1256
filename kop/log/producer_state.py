"""Idempotent-producer sequence checking, per partition (Kafka's rules, pure).

Kafka keeps the last five batches of each producer so a retried batch is
answered with its original offset instead of being written twice; a gap in
sequence numbers is OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch is
INVALID_PRODUCER_EPOCH. A producer kop has no state for (new, or forgotten)
starts a fresh sequence at whatever it sends.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kop.protocol.errors import ErrorCode, KafkaError

T = TypeVar("T")
CACHED_BATCHES = 5
_SEQ_MOD = 1 << 31


@dataclass(slots=True)
class BatchMeta(Generic[T]):
    first_seq: int
    last_seq: int
    result: T  # the batch's base offset, or a handle that will resolve to it


@dataclass(slots=True)
class _Producer(Generic[T]):
    epoch: int
    batches: deque[BatchMeta[T]] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@dataclass(frozen=True, slots=True)
class Duplicate(Generic[T]):
    result: T


class ProducerStates(Generic[T]):
    def __init__(self) -> None:
        self._producers: dict[int, _Producer[T]] = {}

    def check(
        self, producer_id: int, epoch: int, first_seq: int, last_seq: int
    ) -> Duplicate[T] | None:
        """None: the batch is new and in order. Duplicate: answer with its result.
        Raises KafkaError for a fenced epoch or a sequence gap."""
        state = self._producers.get(producer_id)
        if state is None:
            return None
        if epoch < state.epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"producer {producer_id} epoch {epoch} is older than {state.epoch}",
            )
        if epoch > state.epoch:
            if first_seq != 0:
                raise KafkaError(
                    ErrorCode.out_of_order_sequence_number,
                    f"new epoch {epoch} of producer {producer_id} must start at sequence 0",
                )
            return None
        for batch in state.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return Duplicate(batch.result)
        expected = (state.last_seq + 1) % _SEQ_MOD
        if first_seq != expected:
            raise KafkaError(
                ErrorCode.out_of_order_sequence_number,
                f"producer {producer_id} sent sequence {first_seq}, expected {expected}",
            )
        return None

    def record(
        self, producer_id: int, epoch: int, first_seq: int, last_seq: int, result: T
    ) -> None:
        """Remember a batch; recording a batch already known replaces its result
        (a pending handle becomes the final base offset once the log shows it)."""
        state = self._producers.get(producer_id)
        if state is None or epoch > state.epoch:
            state = _Producer(epoch)
            self._producers[producer_id] = state
        elif epoch < state.epoch:
            return
        for batch in state.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                batch.result = result
                return
        state.batches.append(BatchMeta(first_seq, last_seq, result))

    def forget_from(self, producer_id: int, first_seq: int) -> None:
        """A batch failed to persist: drop it and everything after it, so the
        client's retry of it is accepted in order."""
        state = self._producers.get(producer_id)
        if state is None:
            return
        kept = [b for b in state.batches if _seq_before(b.first_seq, first_seq)]
        state.batches.clear()
        state.batches.extend(kept)
        if not kept:
            del self._producers[producer_id]

    def __len__(self) -> int:
        return len(self._producers)


def _seq_before(a: int, b: int) -> bool:
    return a != b and (b - a) % _SEQ_MOD < _SEQ_MOD // 2
