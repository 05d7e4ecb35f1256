"""`kop.pulsar.batching=false` stores one Pulsar entry per record, which is what
makes Pulsar's subscription backlog (counted in entries) equal the Kafka lag.
Switching a partition between the modes replaces its writer; offsets stay dense
and nothing written before the switch is lost or stored twice."""

from __future__ import annotations

from kop.log.partition_log import LogSettings
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, Node, batch
from tests.sim.memory_log import MemoryLog


def _entries(log: MemoryLog) -> list[int]:
    """Messages per entry, in log order."""
    sizes: dict[tuple[int, int], int] = {}
    for m in log.topic(TOPIC).messages():
        key = (m.position.ledger, m.position.entry)
        sizes[key] = sizes.get(key, 0) + 1
    return list(sizes.values())


def test_unbatched_writes_store_one_entry_per_record_and_switching_keeps_offsets(
    loop: SimLoop,
) -> None:
    log = MemoryLog()
    log.topic(TOPIC).batch_size = 10  # what a batching Pulsar producer would pack
    node = Node(loop, log, LogSettings())
    node.start()

    assert node.produce(batch([b"a0", b"a1", b"a2", b"a3"]), batching=True) == 0
    assert node.produce(batch([b"b0", b"b1", b"b2"]), batching=False) == 4
    assert node.produce(batch([b"c0", b"c1"]), batching=True) == 7

    assert _entries(log) == [4, 1, 1, 1, 2]
    assert all(m.position.batch == -1 for m in log.topic(TOPIC).messages()[4:7])
    values = [b"a0", b"a1", b"a2", b"a3", b"b0", b"b1", b"b2", b"c0", b"c1"]
    assert node.fetch(0) == list(enumerate(values))
    assert node.partition().high_watermark == 9
