"""Idempotent-producer sequence state, per partition (Kafka's rules, pure).

Kafka keeps the last five batches of each producer so a retried batch is
answered with its original offset instead of being written twice; a gap in
sequence numbers is OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch is
INVALID_PRODUCER_EPOCH. What kop adds: Pulsar can store a prefix of a batch's
messages and fail the rest, so a batch here is stored record by record as the
log shows it (`observe`), and the retry of a partly stored batch writes only the
missing records (`Write(first_index=k)`). A batch being written carries a
handle that a retry of it waits on. Producers beyond `max_producers` are
forgotten least recently used first.

Like Kafka's producer-state snapshots, the state is persisted (`take_changes`,
`restore`) with the offset index, so a retry that reaches a restarted kop is
still recognised however far back the resume point lies.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from kop.log.tenant_producers import TenantProducers
from kop.protocol.errors import ErrorCode, KafkaError

T = TypeVar("T")
CACHED_BATCHES = 5
SEQ_MOD = 1 << 31


def last_seq(first_seq: int, count: int) -> int:
    return (first_seq + count - 1) % SEQ_MOD


@dataclass(slots=True)
class BatchState(Generic[T]):
    first_seq: int
    count: int
    base_offset: int | None = None  # offset of the batch's record 0, once stored
    stored: int = 0  # how many of its records the log holds (always a prefix)
    writing: T | None = None  # the write in flight, if any

    @property
    def last_seq(self) -> int:
        return last_seq(self.first_seq, self.count)

    @property
    def complete(self) -> bool:
        return self.stored >= self.count


@dataclass(slots=True)
class _Producer(Generic[T]):
    epoch: int
    batches: deque[BatchState[T]] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))
    starts_at_zero: bool = False  # an epoch a marker began: its first batch is sequence 0
    coordinator_epoch: int = -1  # the last marker's (Kafka's ProducerStateEntry keeps it)
    # The sequence from which every batch of this epoch passed through this state in
    # order (-1: none yet): a retry below it may never have been stored (`_not_next`).
    floor: int = -1

    def find(self, first_seq: int, count: int) -> BatchState[T] | None:
        for b in self.batches:
            if b.first_seq == first_seq and b.count == count:
                return b
        return None

    def snapshot(self) -> Snapshot:
        """As persisted: the batches the log holds, not the ones still being written."""
        stored = [
            (b.first_seq, b.count, b.base_offset, b.stored)
            for b in self.batches
            if b.base_offset is not None
        ]
        return Snapshot(self.epoch, stored, self.starts_at_zero, self.coordinator_epoch, self.floor)

    @classmethod
    def restored(cls, snap: Snapshot) -> _Producer[T]:
        # A snapshot from before the floor was kept: the oldest batch it names.
        floor = snap.floor if snap.floor >= 0 else (snap.batches[0][0] if snap.batches else -1)
        state: _Producer[T] = cls(
            snap.epoch, starts_at_zero=snap.starts_at_zero,
            coordinator_epoch=snap.coordinator_epoch, floor=floor,
        )  # fmt: skip
        for first, count, base, stored in snap.batches:
            state.batches.append(BatchState(first, count, base, stored))
        return state


@dataclass(frozen=True, slots=True)
class Write:
    """Write the batch from its record `first_index` on (0: all of it)."""

    first_index: int = 0


@dataclass(frozen=True, slots=True)
class Duplicate:
    """Already stored: answer with its base offset."""

    base_offset: int


@dataclass(frozen=True, slots=True)
class InFlight(Generic[T]):
    """Being written: wait for the original's outcome."""

    handle: T


Decision = Write | Duplicate | InFlight[T]


class Snapshot(NamedTuple):
    """A producer as persisted."""

    epoch: int
    batches: list[tuple[int, int, int, int]]  # (first_seq, count, base_offset, stored)
    starts_at_zero: bool = False  # a marker began the epoch: its first batch is sequence 0
    coordinator_epoch: int = -1  # the last marker's coordinator epoch
    floor: int = -1  # see _Producer.floor (-1: written before it was kept)


class ProducerTable(Generic[T]):
    """The producers a partition remembers: at most `max_producers`, the least recently
    used forgotten first, each counted to its tenant's share, and the ones changed since
    the last snapshot tracked. The sequence rules are ProducerStates' job."""

    def __init__(
        self, max_producers: int = 10_000, share: TenantProducers | None = None, tenant: str = ""
    ) -> None:
        self._producers: OrderedDict[int, _Producer[T]] = OrderedDict()
        self._max = max_producers
        self._changed: set[int] = set()
        self._share = share  # the tenant's producers across its partitions
        self._tenant = tenant

    def _used(self, pid: int) -> None:
        self._producers.move_to_end(pid)
        if self._share is not None:
            self._share.remember(self._tenant, self, pid)

    def forget(self, pid: int) -> None:
        """Past the tenant's share (kop.log.tenant_producers): as if never seen."""
        if self._producers.pop(pid, None) is not None:
            self._changed.add(pid)

    def close(self) -> None:
        """The partition closes: its producers no longer count to the tenant's share."""
        if self._share is not None:
            self._share.release(self._tenant, self, list(self._producers))

    def take_changes(self) -> dict[int, Snapshot | None]:
        """Producers changed since the last call, as snapshots (None: forgotten)."""
        changed, self._changed = self._changed, set()
        out: dict[int, Snapshot | None] = {}
        for pid in changed:
            state = self._producers.get(pid)
            out[pid] = None if state is None else state.snapshot()
        return out

    def return_changes(self, pids: list[int]) -> None:
        self._changed.update(pids)

    def restore(self, snapshots: dict[int, Snapshot]) -> None:
        for pid, snap in snapshots.items():
            self._producers[pid] = _Producer.restored(snap)
            self._used(pid)

    def __len__(self) -> int:
        return len(self._producers)

    def describe(self) -> dict[int, tuple[int, int]]:
        """Each producer remembered: (epoch, last sequence stored or -1), for
        DescribeProducers."""
        return {
            pid: (state.epoch, state.batches[-1].last_seq if state.batches else -1)
            for pid, state in self._producers.items()
        }

    def epoch(self, pid: int) -> int | None:
        """The producer's epoch as the log last showed it (None: not remembered)."""
        state = self._producers.get(pid)
        return None if state is None else state.epoch

    def batch(self, pid: int, first_seq: int, count: int) -> BatchState[T] | None:
        state = self._producers.get(pid)
        return None if state is None else state.find(first_seq, count)

    def _install(self, pid: int, state: _Producer[T]) -> None:
        """A producer's state anew, the least recently used one forgotten past the max."""
        self._producers[pid] = state
        if len(self._producers) > self._max:
            evicted, _ = self._producers.popitem(last=False)
            self._changed.add(evicted)
            if self._share is not None:
                self._share.release(self._tenant, self, [evicted])


class ProducerStates(ProducerTable[T]):
    """Kafka's idempotence and transaction-marker rules over the remembered producers:
    which batch is new, a duplicate or in flight, and what the log shows of each."""

    def check(self, pid: int, epoch: int, first_seq: int, count: int) -> Decision[T]:
        """What to do with a batch a client sent. Raises KafkaError for a fenced
        epoch or a sequence gap."""
        state = self._producers.get(pid)
        if state is None:
            return Write()
        self._used(pid)
        if epoch < state.epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"producer {pid} epoch {epoch} is older than {state.epoch}",
            )
        if epoch > state.epoch:
            if first_seq != 0:
                raise KafkaError(
                    ErrorCode.out_of_order_sequence_number,
                    f"new epoch {epoch} of producer {pid} must start at sequence 0",
                )
            return Write()
        known = state.find(first_seq, count)
        if known is not None:
            if known.complete:
                assert known.base_offset is not None
                return Duplicate(known.base_offset)
            if known.writing is not None:
                return InFlight(known.writing)
            return Write(known.stored)
        expected = self._expected(state)
        if expected is not None and first_seq != expected:
            raise _not_next(pid, first_seq, count, expected, state)
        return Write()

    @staticmethod
    def _expected(state: _Producer[T]) -> int | None:
        """The sequence the next new batch must start at: a failed batch must be
        retried first; otherwise the one after the newest batch."""
        for b in state.batches:
            if not b.complete and b.writing is None:
                return b.first_seq
        if state.batches:
            return (state.batches[-1].last_seq + 1) % SEQ_MOD
        return 0 if state.starts_at_zero else None

    def begin(self, pid: int, epoch: int, first_seq: int, count: int, handle: T) -> None:
        """A write of the batch (or of its missing records) is on its way."""
        self._state(pid, epoch, first_seq, count).writing = handle

    def refused(self, pid: int, epoch: int, first_seq: int, count: int) -> None:
        """A batch judged new (`check` said Write) failed before any of it was sent (no
        writer for the partition, Pulsar not taking writes): remembered as a failed
        batch with nothing stored, so the producer's later batches wait for its retry
        (OUT_OF_ORDER_SEQUENCE_NUMBER, which clients retry behind it). Forgotten, a
        later batch would be stored first and the retry of this one judged a
        duplicate: acknowledged, never stored (the cluster tier's broker kill, where
        the first batch of a producer on a partition found no writer)."""
        state = self._producers.get(pid)
        if state is not None and epoch < state.epoch:
            return
        self._state(pid, epoch, first_seq, count)

    def failed(self, pid: int, epoch: int, first_seq: int, count: int, handle: T) -> None:
        """The write with `handle` failed; what the log shows of it stays known."""
        state = self._producers.get(pid)
        batch = None if state is None or state.epoch != epoch else state.find(first_seq, count)
        if batch is not None and batch.writing is handle:
            batch.writing = None

    def observe(
        self, pid: int, epoch: int, first_seq: int, count: int, index: int, offset: int
    ) -> None:
        """The log holds records 0..`index` of the batch; record `index` is at `offset`.
        (How producer state is learnt from the log, also when rebuilding it.)"""
        state = self._producers.get(pid)
        if state is not None and epoch < state.epoch:
            return
        batch = self._state(pid, epoch, first_seq, count)
        if batch.base_offset is None:
            batch.base_offset = offset - index
        batch.stored = max(batch.stored, index + 1)
        if batch.complete:
            batch.writing = None

    def check_marker(self, pid: int, epoch: int, coordinator_epoch: int) -> None:
        """A transaction marker from a coordinator older than the last one that wrote a
        marker of the producer here (TRANSACTION_COORDINATOR_FENCED), or of a producer
        epoch older than the partition has seen (INVALID_PRODUCER_EPOCH), is refused,
        as Kafka's partition refuses them: a late or stale marker must not end what a
        later coordinator or epoch decided."""
        state = self._producers.get(pid)
        if state is None:
            return
        if coordinator_epoch < state.coordinator_epoch:
            raise KafkaError(
                ErrorCode.transaction_coordinator_fenced,
                f"marker of producer {pid} from coordinator epoch {coordinator_epoch}; the "
                f"partition has seen {state.coordinator_epoch}",
            )
        if epoch < state.epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"marker of producer {pid} at epoch {epoch}; the partition has seen {state.epoch}",
            )

    def marker(self, pid: int, epoch: int, coordinator_epoch: int = -1) -> None:
        """The log holds a transaction marker of the producer at `epoch`. A marker of a
        later epoch (the coordinator fenced the producer) ends the old epoch here too:
        its batches are refused from now on, and the new epoch starts at sequence 0.
        The highest coordinator epoch of its markers is kept."""
        state = self._producers.get(pid)
        if state is not None and epoch <= state.epoch:
            if coordinator_epoch > state.coordinator_epoch:
                state.coordinator_epoch = coordinator_epoch
                self._changed.add(pid)
            return
        known = state.coordinator_epoch if state is not None else -1
        self._install(pid, _Producer(epoch, starts_at_zero=True, floor=0,
                                     coordinator_epoch=max(known, coordinator_epoch)))  # fmt: skip
        self._used(pid)
        self._changed.add(pid)

    def _state(self, pid: int, epoch: int, first_seq: int, count: int) -> BatchState[T]:
        state = self._producers.get(pid)
        if state is None or epoch > state.epoch:
            known = state.coordinator_epoch if state is not None else -1
            state = _Producer(epoch, coordinator_epoch=known, floor=first_seq)
            self._install(pid, state)
        elif state.floor < 0:
            state.floor = 0 if state.starts_at_zero else first_seq
        self._used(pid)
        self._changed.add(pid)
        batch = state.find(first_seq, count)
        if batch is None:
            batch = BatchState(first_seq, count)
            state.batches.append(batch)
        return batch


def _not_next(
    pid: int, first_seq: int, count: int, expected: int, state: _Producer[Any]
) -> KafkaError:
    """The answer to a batch that is not the expected next one. A retry of a batch older
    than the ones remembered is a duplicate when it lies at or after the producer's
    floor: from there every sequence below the expected one is stored (they are taken
    in order, a failed batch first). Kafka's code for it, which clients take as success;
    out of order, the Java client would bump its epoch and send the records again. Below
    the floor kop cannot know: out of order, as Kafka answers a sequence it has no
    record of (a duplicate, at worst, where a DUPLICATE answer could lose records)."""
    at_or_after_floor = (
        state.floor >= 0
        and _stored_before(first_seq, count, expected)
        and ((expected - first_seq) % SEQ_MOD <= (expected - state.floor) % SEQ_MOD)
    )
    if at_or_after_floor and not _failed(state):
        return KafkaError(
            ErrorCode.duplicate_sequence_number,
            f"producer {pid} sequence {first_seq} is stored already (next {expected})",
        )
    return KafkaError(
        ErrorCode.out_of_order_sequence_number,
        f"producer {pid} sent sequence {first_seq}, expected {expected}",
    )


def _stored_before(first_seq: int, count: int, expected: int) -> bool:
    """Whether sequences `first_seq .. first_seq + count - 1` all lie before `expected`,
    at most a quarter of the sequence space back (sequences wrap at SEQ_MOD)."""
    behind = (expected - first_seq) % SEQ_MOD
    return count <= behind <= SEQ_MOD // 4


def _failed(state: _Producer[Any]) -> bool:
    """A remembered batch whose write failed: what lies before the expected sequence
    is then not all stored."""
    return any(not b.complete and b.writing is None for b in state.batches)
