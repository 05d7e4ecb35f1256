"""Counting this kop's own writes from their receipts (kop/log/receipts.py): a
stream of produces is counted without reading it back, and every way the receipts
stop describing the whole log (another writer in between, a new ledger, a place
the storage would not say, a failed write, another writer after the stream)
sends the follower back to reading, with offsets exactly those of the log."""

from __future__ import annotations

from kop.log.partition_log import LogSettings, PartitionLog
from kop.log.receipts import QUIET_S
from kop.protocol.errors import KafkaError
from kop.storage.types import OutgoingEntry, OutgoingMessage
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, Node, batch
from tests.sim.memory_log import MemoryLog

SETTINGS = LogSettings(write_timeout_s=5)


def _native(log: MemoryLog, value: bytes) -> None:
    """Another writer (a Pulsar application) appends one entry, now."""
    log.topic(TOPIC).append([OutgoingEntry.of(OutgoingMessage(value, {}, None, None))], "app", 0)


def _values(node: Node) -> list[bytes | None]:
    got = node.fetch(0)
    assert not isinstance(got, KafkaError)
    assert [o for o, _ in got] == list(range(len(got)))  # dense
    return [v for _, v in got]


def _started(loop: SimLoop, log: MemoryLog) -> tuple[Node, PartitionLog]:
    node = Node(loop, log, SETTINGS)
    node.start()
    assert node.produce(batch([b"first"])) == 0  # something counted to continue from
    return node, node.partition()


def test_a_stream_of_produces_is_counted_from_receipts_not_read_back(loop: SimLoop) -> None:
    log = MemoryLog()
    node, plog = _started(loop, log)
    read_before = plog.stats.counted_from_reads
    offsets = node.produce_stream([batch([b"a%d" % i, b"b%d" % i]) for i in range(20)])
    assert offsets == list(range(1, 41, 2))
    assert plog.stats.counted_from_receipts >= 15
    assert plog.stats.counted_from_reads - read_before <= 5
    assert _values(node)[1:5] == [b"a0", b"b0", b"a1", b"b1"]


def test_produces_one_at_a_time_are_counted_from_receipts(loop: SimLoop) -> None:
    """librdkafka's idempotent producer waits for each answer before it sends the
    next batch: every receipt then arrives while the follower waits on its reader,
    and must still switch it to counting receipts."""
    log = MemoryLog()
    node, plog = _started(loop, log)
    read_before = plog.stats.counted_from_reads
    offsets = [node.produce(batch([b"one%d" % i])) for i in range(20)]
    assert offsets == list(range(1, 21))
    assert plog.stats.counted_from_receipts >= 18
    assert plog.stats.counted_from_reads - read_before <= 2
    assert _values(node)[1:] == [b"one%d" % i for i in range(20)]


def test_another_writers_entry_in_the_stream_is_read_and_counted(loop: SimLoop) -> None:
    log = MemoryLog()
    node, _ = _started(loop, log)

    def interleave(i: int) -> None:
        if i in (3, 11):
            _native(log, b"app%d" % i)

    offsets = node.produce_stream([batch([b"k%d" % i]) for i in range(16)], between=interleave)
    values = _values(node)
    assert all(values[o] == b"k%d" % i for i, o in enumerate(offsets))  # type: ignore[index]
    assert sorted(v for v in values if v and v.startswith(b"app")) == [b"app11", b"app3"]
    assert len(values) == 1 + 16 + 2


def test_a_new_ledger_sends_the_follower_back_to_reading(loop: SimLoop) -> None:
    log = MemoryLog()
    node, _ = _started(loop, log)

    def roll(i: int) -> None:
        if i == 5:
            log.topic(TOPIC).roll()

    offsets = node.produce_stream([batch([b"r%d" % i]) for i in range(10)], between=roll)
    assert offsets == list(range(1, 11))
    assert _values(node)[1:] == [b"r%d" % i for i in range(10)]


def test_a_receipt_without_a_place_and_a_failed_write_are_left_to_reading(
    loop: SimLoop,
) -> None:
    log = MemoryLog()
    node, plog = _started(loop, log)
    topic = log.topic(TOPIC)

    def trouble(i: int) -> None:
        if i == 2:
            topic.forget_next_position = True
        if i == 6:
            topic.persist_next = 0

    offsets = node.produce_stream([batch([b"t%d" % i]) for i in range(10)], between=trouble)
    failed = {i for i, o in enumerate(offsets) if isinstance(o, KafkaError)}
    assert failed and min(failed) >= 6  # the failed write, and writes in flight with it
    values = _values(node)
    for i, offset in enumerate(offsets):  # every acknowledged write where it was told
        assert isinstance(offset, KafkaError) or values[offset] == b"t%d" % i
    # a failed write may be stored (the client retries it): in order, once each
    assert values[1:] == [b"t%d" % i for i in range(10) if b"t%d" % i in values]
    assert node.produce(batch([b"again"])) == len(values)
    assert plog.stats.counted_from_receipts > 0


def test_another_writer_after_the_stream_is_seen_within_the_quiet_spell(loop: SimLoop) -> None:
    log = MemoryLog()
    node, plog = _started(loop, log)
    node.produce_stream([batch([b"s%d" % i]) for i in range(8)])
    loop.run(_write_native(log), within=1)
    loop.settle(QUIET_S * 2)
    assert plog.high_watermark == 10
    assert _values(node)[-1] == b"native"


async def _write_native(log: MemoryLog) -> None:
    _native(log, b"native")
