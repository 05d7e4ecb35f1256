"""A share group's dead letters at its share-partition (kop/groups/share/partition.py,
kop/groups/share/dead_letters.py): a rejected record, and one released, or whose lock
lapsed, after its last allowed delivery, gets a letter with Kafka's headers (KIP-1191)
before Pulsar is told its entry is done; a gap and an accepted record get none; the
record's key and value only where the group copies them; a letter that cannot be
written leaves the record archived all the same."""

from __future__ import annotations

from kop.entries.formats import EntryFormat
from kop.groups.share.dead_letters import DeadLetterError, DeadLetterPolicy, DeadLetters
from kop.groups.share.partition import SharePartition
from kop.groups.share.records import AckBatch, AckType, ShareLimits
from kop.log.partition_log import LogSettings
from kop.protocol.records import Record, build_batch
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, Node
from tests.sim.memory_log import MemoryLog
from tests.sim.memory_shared import MemoryShared
from tests.sim.test_share_partition import _acquired, _after

LIMITS = ShareLimits(lock_ms=1_000, delivery_limit=2, max_locks=100)
POLICY = DeadLetterPolicy("public/default/g", "g", "dlq.t")
ACCEPT, RELEASE, REJECT, GAP = AckType.ACCEPT, AckType.RELEASE, AckType.REJECT, AckType.GAP


class Sink:
    """Keeps what it is given; notes whether Pulsar still had the entry unacknowledged
    when it was asked (a letter comes before the ack)."""

    def __init__(self, sub: MemoryShared | None = None, fail: bool = False) -> None:
        self.sub = sub
        self.fail = fail
        self.got: list[DeadLetters] = []
        self.backlog_at_write: list[int] = []

    async def write(self, letters: DeadLetters) -> None:
        if self.sub is not None:
            self.backlog_at_write.append(len(self.sub.sub.backlog()))
        if self.fail:
            raise DeadLetterError("DLQ is not enabled on configured DLQ topic")
        self.got.append(letters)

    def headers(self) -> list[dict[str, str]]:
        return [
            {k: (v or b"").decode() for k, v in r.headers}
            for letters in self.got
            for r in letters.records
        ]


def _keyed(n: int) -> bytes:
    return build_batch([Record(i, 1_000 + i, f"k{i}".encode(), f"v{i}".encode()) for i in range(n)])


def _share(
    loop: SimLoop, records: int, policy: DeadLetterPolicy = POLICY, fail: bool = False
) -> tuple[SharePartition, MemoryShared, Sink]:
    log = MemoryLog()
    node = Node(loop, log, LogSettings())
    node.start()
    node.produce(_keyed(records), EntryFormat.KAFKA)  # one entry of `records` records
    sub = loop.run(log.shared(TOPIC, "kafka-share-g", earliest=True), within=10)
    plog = node.partition()

    sink = Sink(sub, fail)

    async def made() -> SharePartition:
        clock = lambda: int(loop.time() * 1000)  # noqa: E731
        return SharePartition(plog, sub, LIMITS, clock, source=("t", 3), dead_letters=sink)

    sp = loop.run(made(), within=10)
    sp.configure(LIMITS, policy)
    return sp, sub, sink


def _ack(loop: SimLoop, sp: SharePartition, member: str, first: int, *types: int) -> None:
    loop.run(sp.acknowledge(member, [AckBatch(first, first + len(types) - 1, types)]), within=10)


def test_a_rejected_record_gets_a_letter_before_its_entry_is_acknowledged(loop: SimLoop) -> None:
    sp, sub, sink = _share(loop, 3)
    _acquired(loop, sp, "a", 10)
    _ack(loop, sp, "a", 0, ACCEPT, REJECT, GAP)
    assert sink.headers() == [{
        "__dlq.errors.topic": "t", "__dlq.errors.partition": "3",
        "__dlq.errors.offset": "1", "__dlq.errors.group": "g",
        "__dlq.errors.delivery.count": "1",
        "__dlq.errors.message": "Offset rejected by client.",
    }]  # fmt: skip
    assert sink.backlog_at_write == [1]  # the entry was still Pulsar's to acknowledge
    assert sub.sub.backlog() == []  # then acknowledged: every record is finished
    only = sink.got[0].records[0]
    assert (only.key, only.value) == (None, None)  # not copied: the group did not ask
    loop.run(sp.close(), within=10)


def test_a_record_past_its_delivery_limit_gets_a_letter_with_its_key_and_value(
    loop: SimLoop,
) -> None:
    sp, sub, sink = _share(loop, 2, DeadLetterPolicy("public/default/g", "g", "dlq.t", copy=True))
    _acquired(loop, sp, "a", 10)
    _ack(loop, sp, "a", 0, ACCEPT, RELEASE)  # offset 1: delivered once, released
    assert sink.got == []
    again, _ = _acquired(loop, sp, "b", 10)
    assert [(a.first, a.delivery_count) for a in again] == [(1, 2)]
    loop.run(_after(1.5), within=10)
    loop.run(sp.expire(), within=10)  # its lock lapses after its last allowed delivery
    letter = sink.got[0].records[0]
    assert (letter.key, letter.value) == (b"k1", b"v1")
    assert sink.headers()[0]["__dlq.errors.delivery.count"] == "2"
    assert (
        sink.headers()[0]["__dlq.errors.message"] == "Offset delivery count exceeded the threshold."
    )
    assert sub.sub.backlog() == []
    loop.run(sp.close(), within=10)


def test_no_topic_no_letter_and_a_refused_letter_still_archives(loop: SimLoop) -> None:
    sp, sub, sink = _share(loop, 1, DeadLetterPolicy("public/default/g", "g"))
    _acquired(loop, sp, "a", 10)
    _ack(loop, sp, "a", 0, REJECT)
    assert sink.backlog_at_write == [] and sub.sub.backlog() == []
    loop.run(sp.close(), within=10)

    sp, sub, sink = _share(loop, 1, fail=True)
    _acquired(loop, sp, "a", 10)
    _ack(loop, sp, "a", 0, REJECT)
    assert sink.backlog_at_write == [1]  # asked, refused
    assert sub.sub.backlog() == []  # archived all the same, as Kafka does
    loop.run(sp.close(), within=10)
