"""What the driver fixes before any task reads: a topic's partitions, where each
ends, how each is split into entry ranges for the Pulsar view, and what kop has
persisted about it (offset-index checkpoints, mark, DeleteRecords floor).

Everything here is small and read once, through kop's own admin client and
checkpoint store, so the validator reads kop's index exactly as kop does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kop.log.checkpoint_store import CheckpointStore, Persisted
from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.client import PulsarSession
from kop.storage.naming import Namespace, PulsarTopic, resolve
from spark_jobs.blocking import run_apart
from spark_jobs.options import Stack

Pos = tuple[int, int, int]  # (ledger, entry, batch index): plain ints, they pickle


@dataclass(frozen=True, slots=True)
class Split:
    """Messages of one partition from `start` (inclusive; None = the earliest) to
    `end` (exclusive, or inclusive when `last`)."""

    topic: str  # persistent://...-partition-i
    partition: int
    index: int  # its place among the partition's splits
    start: Pos | None
    end: Pos
    last: bool


@dataclass(slots=True)
class PartitionLayout:
    topic: str
    partition: int
    end: Pos | None  # the last stored message; None = empty
    splits: list[Split] = field(default_factory=list)
    persisted: Persisted = field(default_factory=Persisted)
    first: Pos | None = None  # the first stored message

    @property
    def start(self) -> int:
        """The offset of the first stored record: 0, unless kop persisted a checkpoint
        naming the first message (retention deleted the oldest ledgers, and kop
        knows what the first survivor's offset is)."""
        return self.checkpoint_at(self.first) or 0

    @property
    def anchored(self) -> bool:
        return self.checkpoint_at(self.first) is not None

    def checkpoint_at(self, position: Pos | None) -> int | None:
        for c in self.persisted.checkpoints.values():
            if tuple(c.position) == position:
                return c.offset
        return None


def plan_splits(
    topic: str, partition: int, end: Pos, ledgers: list[tuple[int, int]], split_entries: int
) -> list[Split]:
    """Cut a partition at every `split_entries` entries of each ledger, so one large
    partition becomes many tasks. Cuts fall on entry starts (a batch is never cut)."""
    cuts: list[Pos] = []
    for ledger, entries in ledgers:
        if ledger > end[0]:
            break
        stop = entries if ledger < end[0] else end[1] + 1
        cuts += [(ledger, e, -1) for e in range(0, stop, split_entries)]
    cuts = [c for c in cuts[1:] if c <= end]  # the first split starts at the earliest
    starts: list[Pos | None] = [None, *cuts]
    return [
        Split(topic, partition, i, start, cuts[i] if i < len(cuts) else end, i == len(cuts))
        for i, start in enumerate(starts)
    ]


async def _layout(stack: Stack, split_entries: int) -> list[PartitionLayout]:
    admin = PulsarAdmin(stack.admin_url)
    session = PulsarSession(stack.pulsar_url, admin)
    tenant, ns = stack.namespace.split("/", 1)
    topic: PulsarTopic = resolve(stack.topic, Namespace(tenant, ns))
    try:
        info = await admin.topic_info(topic)
        if info is None:
            raise SystemExit(f"topic {stack.topic} ({topic.full}) does not exist in Pulsar")
        store = CheckpointStore(session, f"persistent://{stack.system_namespace}/offset-index")
        out = []
        for p in range(info.kafka_partitions):
            name = topic.partition(p, info.partitions > 0)
            end = await admin.last_message_id(name)
            layout = PartitionLayout(name, p, end, persisted=await store.load(name))
            if end is not None:
                first = await session.earliest(name)
                layout.first = None if first is None else (first.ledger, first.entry, first.batch)
                ledgers = await admin.ledgers(name)
                layout.splits = plan_splits(name, p, end, ledgers, split_entries)
            out.append(layout)
        return out
    finally:
        await session.close()
        await admin.close()


def topic_layout(stack: Stack, split_entries: int) -> list[PartitionLayout]:
    return run_apart(_layout(stack, split_entries))
