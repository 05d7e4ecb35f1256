"""The records of one share-partition that kop holds for a share group: which
Kafka member has acquired which, until when, how often each was delivered, and
what goes back to Pulsar (D27). Pure: no I/O, no clock of its own.

Pulsar's dispatcher gives kop's Shared consumer whole entries (`offer`); a Pulsar
application on the same subscription gets others. kop splits what it holds among
its Kafka members by records (`acquire`), as Kafka's share-partition leader does,
and answers to Pulsar by entries, because an entry is acknowledged whole:

- every record of an entry accepted, rejected or archived: the entry is
  acknowledged (`Settled.ack`; kop answers the member once Pulsar has it);
- every record of an entry released (or its lock expired) and none resolved: the
  entry goes back to the subscription (`Settled.release`), so the next delivery may
  be anyone's, a Pulsar consumer's included, and Pulsar counts the redelivery;
- released records of an entry whose other records are resolved stay here and
  are acquired again by a Kafka member: giving the entry back would deliver its
  accepted records a second time.

A record's delivery count starts at Pulsar's redelivery count and grows by one per
acquisition; a record released (or whose lock expired) after its `delivery_limit`-th
delivery is archived, as Kafka archives it (`share.delivery.count.limit`).

Each record archived because a member rejected it or because it ran out of deliveries
is named in `Settled.dead`, with its count and the cause, as the moment it is archived:
what a group's dead-letter topic gets (kop.groups.share.dead_letters). A gap is no
record and is named nowhere.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Generic, TypeVar

from kop.protocol.errors import ErrorCode, KafkaError

T = TypeVar("T")


class RecordState(IntEnum):
    """Kafka's share-partition record states (the numbers DescribeShareGroupOffsets
    and the admin tools print)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(IntEnum):
    """ShareAcknowledge's and ShareFetch's acknowledge types."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


_RESOLVED = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass(frozen=True, slots=True)
class ShareLimits:
    lock_ms: int = 30_000  # share.record.lock.duration.ms
    delivery_limit: int = 5  # share.delivery.count.limit
    max_locks: int = 2_000  # group.share.partition.max.record.locks


@dataclass(frozen=True, slots=True)
class Acquired:
    """Records `first`..`last` acquired, each delivered `delivery_count` times now;
    they lie in the entry at `base` (what the fetch serves)."""

    first: int
    last: int
    delivery_count: int
    base: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One acknowledgement batch: one type for all of `first`..`last`, or one each."""

    first: int
    last: int
    types: tuple[int, ...]


class DeadCause(StrEnum):
    """Why a record was archived, in the words Kafka's dead-letter records carry
    (KIP-1191's `__dlq.errors.message`)."""

    REJECTED = "Offset rejected by client."
    DELIVERY_COUNT = "Offset delivery count exceeded the threshold."


@dataclass(frozen=True, slots=True)
class Dead:
    """Record `offset` (in the entry at `base`) archived after `count` deliveries."""

    offset: int
    base: int
    count: int
    cause: DeadCause


@dataclass(slots=True)
class Settled(Generic[T]):
    """What Pulsar must be told: entries to acknowledge, entries to give back; and
    the records archived as dead letters meanwhile."""

    ack: list[T] = field(default_factory=list)
    release: list[T] = field(default_factory=list)
    dead: list[Dead] = field(default_factory=list)

    def __bool__(self) -> bool:
        """Whether Pulsar must be told anything (letters alone tell it nothing)."""
        return bool(self.ack or self.release)

    def add(self, other: Settled[T]) -> None:
        self.ack += other.ack
        self.release += other.release
        self.dead += other.dead


@dataclass(slots=True)
class _Held(Generic[T]):
    """An entry kop holds: per record its state, owner, lock deadline and deliveries."""

    token: T
    base: int
    states: list[RecordState]
    owners: list[str | None]
    deadlines: list[int]
    counts: list[int]

    @property
    def last(self) -> int:
        return self.base + len(self.states) - 1


class ShareRecords(Generic[T]):
    """One share-partition's held records; `T` is whatever names a Pulsar delivery."""

    def __init__(self, limits: ShareLimits) -> None:
        self.limits = limits
        self._bases: list[int] = []  # sorted
        self._held: dict[int, _Held[T]] = {}
        self.acquired = 0  # records acquired now (the lock limit counts these)

    def __len__(self) -> int:
        return len(self._held)

    @property
    def available(self) -> int:
        return sum(s is RecordState.AVAILABLE for held in self._held.values() for s in held.states)

    def offer(self, token: T, base: int, count: int, delivered_before: int) -> None:
        """Pulsar delivered the entry holding `count` records from `base`, after
        `delivered_before` earlier deliveries of it."""
        if base in self._held:
            return  # delivered twice while held: the first delivery stands
        bisect.insort(self._bases, base)
        self._held[base] = _Held(
            token, base, [RecordState.AVAILABLE] * count, [None] * count, [0] * count,
            [delivered_before] * count,
        )  # fmt: skip

    def acquire(
        self, member: str, max_records: int, now_ms: int, cap: int | None = None
    ) -> list[Acquired]:
        """Available records in offset order, whole entries at a time, for `member`:
        at least `max_records` unless fewer are available (an entry is not split), and
        never past the lock limit. `cap`: never more than that many records, an entry
        split if need be (the record-limit acquire mode, KIP-1206)."""
        out: list[Acquired] = []
        taken = 0
        room = self.limits.max_locks - self.acquired
        if cap is not None:
            room = min(room, cap)
        deadline = now_ms + self.limits.lock_ms
        for base in self._bases:
            if taken >= max_records or room <= 0:
                break
            held = self._held[base]
            for i, state in enumerate(held.states):
                if state is not RecordState.AVAILABLE or room <= 0:
                    continue
                held.states[i] = RecordState.ACQUIRED
                held.owners[i] = member
                held.deadlines[i] = deadline
                held.counts[i] += 1
                taken += 1
                room -= 1
                _extend(out, base + i, held.counts[i], base)
        self.acquired += taken
        return out

    def acknowledge(
        self, member: str, batches: Sequence[AckBatch], now_ms: int, renew: bool = True
    ) -> Settled[T]:
        """All of `batches` or nothing: KafkaError(INVALID_REQUEST) for a malformed
        batch, KafkaError(INVALID_RECORD_STATE) when a record is not acquired by
        `member` (its lock expired, it was never acquired, or another holds it) or is
        renewed where the group does not allow it (`renew`: share.renew.acknowledge.enable).
        A renewal restarts the record's lock; it stays the member's, its delivery count
        unchanged (KIP-1222)."""
        changes: list[tuple[_Held[T], int, AckType]] = []
        for batch in batches:
            for offset, kind in _each(batch):
                held = self._holding(offset)
                if held is None:
                    raise KafkaError(ErrorCode.invalid_record_state, f"offset {offset} not held")
                i = offset - held.base
                if held.states[i] is not RecordState.ACQUIRED or held.owners[i] != member:
                    raise KafkaError(
                        ErrorCode.invalid_record_state, f"offset {offset} not acquired by you"
                    )
                if kind is AckType.RENEW and not renew:
                    raise KafkaError(
                        ErrorCode.invalid_record_state,
                        "Renewing acquisition locks is not enabled for the group.",
                    )
                changes.append((held, i, kind))
        touched: dict[int, _Held[T]] = {}
        dead: list[Dead] = []
        for held, i, kind in changes:
            touched[held.base] = held
            if kind is AckType.RENEW:
                held.deadlines[i] = now_ms + self.limits.lock_ms
                continue
            self.acquired -= 1
            held.owners[i] = None
            if kind is AckType.ACCEPT:
                held.states[i] = RecordState.ACKNOWLEDGED
            elif kind is AckType.RELEASE:
                held.states[i] = self._released(held, i, dead)
            else:  # REJECT, or GAP: nothing there to deliver
                held.states[i] = RecordState.ARCHIVED
                if kind is AckType.REJECT:
                    dead.append(Dead(held.base + i, held.base, held.counts[i], DeadCause.REJECTED))
        out = self._settle(touched.values())
        out.dead = dead
        return out

    def expire(self, now_ms: int) -> Settled[T]:
        """Locks past their deadline end as if released."""
        return self._give_back(lambda held, i: held.deadlines[i] <= now_ms)

    def release_member(self, member: str) -> Settled[T]:
        """A member that left (or whose share session ended): what it holds is released."""
        return self._give_back(lambda held, i: held.owners[i] == member)

    def drop(self, keep: Callable[[T], bool]) -> None:
        """Forgets entries whose delivery Pulsar took back (kop's consumer attached
        anew): their records are acquired by nobody any more."""
        for base in [b for b, held in self._held.items() if not keep(held.token)]:
            held = self._held.pop(base)
            self.acquired -= sum(s is RecordState.ACQUIRED for s in held.states)
            self._bases.remove(base)

    def tokens(self) -> list[T]:
        """The deliveries held, in offset order."""
        return [self._held[b].token for b in self._bases]

    def next_deadline(self) -> int | None:
        deadlines = [
            d
            for held in self._held.values()
            for s, d in zip(held.states, held.deadlines, strict=True)
            if s is RecordState.ACQUIRED
        ]
        return min(deadlines, default=None)

    def states(self) -> list[tuple[int, RecordState, int]]:
        """(offset, state, delivery count) of every held record, in offset order."""
        return [
            (held.base + i, state, held.counts[i])
            for base in self._bases
            for held in (self._held[base],)
            for i, state in enumerate(held.states)
        ]

    # -- inside ---------------------------------------------------------------------

    def _released(self, held: _Held[T], i: int, dead: list[Dead]) -> RecordState:
        """A released record's next state: archived (a dead letter) once delivered as
        often as allowed."""
        count = held.counts[i]
        if count < self.limits.delivery_limit:
            return RecordState.AVAILABLE
        dead.append(Dead(held.base + i, held.base, count, DeadCause.DELIVERY_COUNT))
        return RecordState.ARCHIVED

    def _give_back(self, which: Callable[[_Held[T], int], bool]) -> Settled[T]:
        touched = []
        dead: list[Dead] = []
        for held in self._held.values():
            hit = False
            for i, state in enumerate(held.states):
                if state is RecordState.ACQUIRED and which(held, i):
                    held.states[i] = self._released(held, i, dead)
                    held.owners[i] = None
                    self.acquired -= 1
                    hit = True
            if hit:
                touched.append(held)
        out = self._settle(touched)
        out.dead = dead
        return out

    def _settle(self, touched: Iterable[_Held[T]]) -> Settled[T]:
        out: Settled[T] = Settled()
        for held in list(touched):
            states = held.states
            if all(s in _RESOLVED for s in states):
                out.ack.append(held.token)
            elif all(s is RecordState.AVAILABLE for s in states):
                # Nothing resolved: Pulsar may give it to anyone, counting the delivery.
                out.release.append(held.token)
            else:
                continue
            del self._held[held.base]
            self._bases.remove(held.base)
        return out

    def _holding(self, offset: int) -> _Held[T] | None:
        i = bisect.bisect_right(self._bases, offset)
        if not i:
            return None
        held = self._held[self._bases[i - 1]]
        return held if offset <= held.last else None


def _extend(out: list[Acquired], offset: int, count: int, base: int) -> None:
    last = out[-1] if out else None
    if last is not None and last.last + 1 == offset and last.delivery_count == count:
        out[-1] = Acquired(last.first, offset, count, last.base)
    else:
        out.append(Acquired(offset, offset, count, base))


def _each(batch: AckBatch) -> Iterator[tuple[int, AckType]]:
    """Each offset of a batch with its type; KafkaError(INVALID_REQUEST) if malformed.
    Lazy: a batch naming more offsets than are held fails at the first one not held,
    however many it names."""
    span = batch.last - batch.first + 1
    if batch.first < 0 or span < 1:
        raise KafkaError(
            ErrorCode.invalid_request, "an acknowledgement batch ends before it starts"
        )
    if len(batch.types) not in (1, span):
        raise KafkaError(ErrorCode.invalid_request, "acknowledge types do not match the batch")
    try:
        kinds = [AckType(t) for t in batch.types]
    except ValueError:
        raise KafkaError(ErrorCode.invalid_request, "unknown acknowledge type") from None
    if len(kinds) == 1:
        return ((batch.first + k, kinds[0]) for k in range(span))
    return ((batch.first + k, kind) for k, kind in enumerate(kinds))
