"""A share group's delivery names its entry by position; kop serves its records by
offset (`PartitionLog.entry_at`). Every stored entry is found at its own base offset,
from the tail buffer and from history past sparse checkpoints, in both entry formats;
a position nothing is stored at is None. The delivery comes through the in-memory
Shared subscription, as Pulsar's dispatcher would give it."""

from __future__ import annotations

import pytest

from kop.entries.formats import EntryFormat
from kop.log.partition_log import LogSettings
from kop.storage.types import Position
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, Node, batch
from tests.sim.memory_log import MemoryLog

HISTORY_ONLY = LogSettings(checkpoint_interval=3, tail_buffer_bytes=0, write_timeout_s=5)


@pytest.mark.parametrize("fmt", list(EntryFormat))
@pytest.mark.parametrize("settings", [LogSettings(), HISTORY_ONLY], ids=["tail", "history"])
def test_every_delivered_entry_is_found_at_its_offsets(
    loop: SimLoop, fmt: EntryFormat, settings: LogSettings
) -> None:
    log = MemoryLog()
    node = Node(loop, log, settings)
    node.start()
    bases = [node.produce(batch([f"v{i}-{k}".encode() for k in range(1 + i % 3)]), fmt)
             for i in range(12)]  # fmt: skip
    plog = node.partition()
    shared = loop.run(log.shared(TOPIC, "kop-share-g", earliest=True), within=10)
    found = []
    for _ in log.topic(TOPIC).entries():
        delivered = loop.run(shared.receive(), within=10)
        item = loop.run(plog.entry_at(delivered.position), within=30)
        assert item is not None and item.position.entry_key == delivered.position.entry_key
        found.append((item.base_offset, item.entry.count))
    # Every record offset of every produce is covered exactly once, in order.
    covered = [base + k for base, count in found for k in range(count)]
    assert covered == list(range(plog.high_watermark))
    assert [base for base, _ in found] == bases  # one entry per produce here
    assert loop.run(plog.entry_at(Position(10**9, 0)), within=10) is None
