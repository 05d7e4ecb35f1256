"""The transaction state topic over the in-memory log: what a coordinator made
durable, the next owner of the partition loads (latest per transactional id,
forgotten ids gone); the earlier owner is fenced; an unreadable record is skipped."""

from __future__ import annotations

import pytest

from kop.storage import batch_layout
from kop.storage.types import OutgoingMessage, WriterFenced
from kop.txn.state import State, TxnMeta
from kop.txn.store import TxnStore
from tests.sim.clock import SimLoop
from tests.sim.memory_log import MemoryLog

TOPIC = "persistent://public/__kop/transaction-state"


def test_the_next_owner_loads_the_latest_state_and_fences_the_last(loop: SimLoop) -> None:
    log = MemoryLog()
    first = TxnStore(log, TOPIC, 3)
    p = first.partition_for("t1")
    loop.run(first.load(p), within=10)
    ongoing = TxnMeta("t1", 7, 0, 60_000, State.ONGOING, frozenset({("a", 0)}), 1000)
    loop.run(first.write(ongoing), within=10)
    committing = TxnMeta("t1", 7, 0, 60_000, State.PREPARE_COMMIT, frozenset({("a", 0)}), 1000)
    loop.run(first.write(committing), within=10)
    gone = next(f"x{i}" for i in range(100) if first.partition_for(f"x{i}") == p)
    loop.run(first.write(TxnMeta(gone, 8, 0, 1000)), within=10)
    loop.run(first.forget(gone), within=10)

    second = TxnStore(log.instance(), TOPIC, 3)  # another kop instance
    assert loop.run(second.load(p), within=10) == {"t1": committing}
    with pytest.raises(WriterFenced):
        loop.run(first.write(TxnMeta("t1", 7, 1, 60_000)), within=10)


def test_an_unreadable_record_is_skipped_and_counted(loop: SimLoop) -> None:
    log = MemoryLog()
    store = TxnStore(log, TOPIC, 1)
    loop.run(store.load(0), within=10)
    meta = TxnMeta("t1", 7, 0, 60_000)
    loop.run(store.write(meta), within=10)
    topic = log.topic(f"{TOPIC}-partition-0")

    async def garbage() -> None:  # as if a newer kop, or another program, wrote it
        bad = OutgoingMessage(b'{"v": 9}', {}, "t2", None)
        topic.append([batch_layout.entry([bad])], "x", 0)

    loop.run(garbage(), within=10)
    again = TxnStore(log, TOPIC, 1)
    assert loop.run(again.load(0), within=10) == {"t1": meta}
    assert again.malformed == 1
