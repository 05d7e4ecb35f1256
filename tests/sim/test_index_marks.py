"""How often the offset index is written with many slow partitions: a partition's
mark (and producer snapshots) alone is persisted at most every `mark_interval_s`,
new checkpoints at once. Before, every partition that took a record wrote its mark
every second: with 1,000 partitions a thousand index messages a second, which a new
owner then read back at a takeover (bench.instances: 30-49 s to hand over 313
partitions). A crash in between loses nothing: the next start counts on from the
last persisted mark."""

from __future__ import annotations

from kop.log.partition_log import LogSettings
from kop.storage import batch_layout
from tests.sim.clock import SimLoop
from tests.sim.harness import INDEX_TOPIC, Node, batch
from tests.sim.memory_log import MemoryLog

PARTITIONS = [f"persistent://public/default/t{i}-partition-0" for i in range(50)]


def _index_messages(log: MemoryLog) -> int:
    return sum(
        len(batch_layout.messages(e))
        for name, topic in log.topics.items()
        if name.startswith(INDEX_TOPIC)
        for e in topic.entries()
    )


def _one_record_each(node: Node, round_: int) -> None:
    for topic in PARTITIONS:
        assert node.produce(batch([b"r%d" % round_]), topic=topic) == round_


def test_slow_partitions_write_their_marks_every_mark_interval_not_every_second(
    loop: SimLoop,
) -> None:
    log = MemoryLog()
    node = Node(loop, log, LogSettings(mark_interval_s=10.0))
    node.start()
    _one_record_each(node, 0)
    loop.settle(1.5)  # the first flush stores every partition's first mark
    first = _index_messages(log)
    assert first >= len(PARTITIONS)

    for round_ in range(1, 8):  # a record a second on every partition, for 7 s
        _one_record_each(node, round_)
        loop.settle(1.0)
    assert _index_messages(log) == first  # marks alone wait out the interval

    loop.settle(4.0)
    assert _index_messages(log) >= first + len(PARTITIONS)  # and then go

    _one_record_each(node, 8)
    node.crash()  # the last records' marks never stored
    again = Node(loop, log, LogSettings(mark_interval_s=10.0))
    again.start()
    assert [again.partition(t).high_watermark for t in PARTITIONS] == [9] * len(PARTITIONS)
