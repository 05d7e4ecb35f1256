"""One incremental fetch session (KIP-227): the partitions a client fetches, what it
last asked of each and what it was last told of each, so that an incremental request
names only what changed and its answer only partitions with something to say.

The rules are Kafka's (`CachedPartition` and `FetchSession` in its FetchSession.scala),
with one addition: a changed last stable offset is said too (see `Cached.must_answer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kio.schema.fetch.v12.request import FetchPartition
from kio.schema.fetch.v12.response import PartitionData

from kop.protocol.errors import ErrorCode

INITIAL_EPOCH, FINAL_EPOCH = 0, -1  # KIP-227: "open a session", "no session"
NO_SESSION = 0  # the session id of an answer that opened none
_MAX_EPOCH = (1 << 31) - 1

Key = tuple[str, int]  # topic name, partition (kop serves Fetch up to v12: no topic ids)


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`, as Kafka's FetchMetadata.nextEpoch: it wraps to 1, never
    to 0 (which opens a session), and the final epoch stays final."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_EPOCH else epoch + 1


@dataclass(frozen=True, slots=True)
class Owner:
    """Who opened a session: only the same principal, in the same namespace, through
    the same listener, may use it or close it."""

    listener: str
    principal: str
    namespace: str


@dataclass(slots=True)
class Cached:
    """A partition of a session: what the client last asked (its fetch offset, max bytes
    and leader epoch, in the request's own partition) and what it was last told."""

    asked: FetchPartition
    high_watermark: int = -1
    log_start: int = -1
    last_stable: int = -1

    def must_answer(self, part: PartitionData, update: bool = True) -> bool:
        """Whether an incremental answer names this partition: it has records, an error,
        or a high watermark or log start offset other than the client was last told
        (Kafka's `maybeUpdateResponseData`). kop also says a changed last stable offset,
        which Kafka leaves to the next change of the high watermark: a read_committed
        client's lag is read from it, and naming a partition once more costs nothing.
        An error forgets the high watermark, so the partition is named again once the
        error is gone."""
        must = bool(part.records) or part.error_code != ErrorCode.none
        if self.high_watermark != part.high_watermark:
            must = True
            if update:
                self.high_watermark = part.high_watermark
        if self.log_start != part.log_start_offset:
            must = True
            if update:
                self.log_start = part.log_start_offset
        if self.last_stable != part.last_stable_offset:
            must = True
            if update:
                self.last_stable = part.last_stable_offset
        if part.error_code != ErrorCode.none and update:
            self.high_watermark = -1
        return must


@dataclass(eq=False, slots=True)
class Session:
    """A session's state. `epoch` is the one its next request must carry; `evictable`
    and `size` are as of its last use (Kafka's evictable key is computed at touch)."""

    id: int
    owner: Owner
    created_ms: int
    last_used_ms: int
    epoch: int = 1
    partitions: dict[Key, Cached] = field(default_factory=dict)  # in fetch order
    evictable: bool = False
    size: int = 0  # partitions as of its last use (what the cache counts)

    def update(self, asked: list[tuple[Key, FetchPartition]], forgotten: Sequence[Key]) -> None:
        """An incremental request: partitions named are added or take their new fetch
        position; forgotten ones leave (Kafka's `FetchSession.update`)."""
        for key, p in asked:
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = Cached(p)
            else:
                cached.asked = p
        for key in forgotten:
            self.partitions.pop(key, None)

    def asked(self) -> list[tuple[Key, FetchPartition]]:
        """Every partition of the session, with what the client last asked of it."""
        return [(key, c.asked) for key, c in self.partitions.items()]

    def answered(self, parts: list[tuple[Key, PartitionData]]) -> list[tuple[Key, PartitionData]]:
        """The incremental answer: only partitions with something to say. Those that
        brought records move to the end of the session, so the next fetch fills its
        byte budget from the others first (Kafka's round robin)."""
        kept = []
        for key, part in parts:
            cached = self.partitions.get(key)
            if cached is None or not cached.must_answer(part):
                continue
            kept.append((key, part))
            if part.records:
                del self.partitions[key]
                self.partitions[key] = cached
        return kept
