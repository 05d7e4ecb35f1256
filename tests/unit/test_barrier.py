"""Reading a system table to one's own barrier (kop/systables/barrier.py): each table's
barrier format is the one it always wrote (older kops read the same tables), another
reader's barrier is skipped, and a reader stops at its own, not at the table's end."""

from __future__ import annotations

import asyncio

import pytest

from kop.storage import batch_layout
from kop.storage.types import OutgoingMessage, Position, StoredMessage
from kop.systables.barrier import EPOCHS, HELD, BarrierFormat, Barriers, read_to_barrier
from tests.sim.memory_log import MemoryLog

TOPIC = "persistent://public/__kop/table"


def test_each_table_keeps_the_barrier_format_it_always_wrote() -> None:
    held = HELD.message("abc")
    assert (held.partition_key, held.payload) == ("barrier|", b"abc")
    epochs = EPOCHS.message("abc", owner="3")
    assert (epochs.partition_key, epochs.payload) == ("sync|3", b'{"sync": "abc"}')
    assert EPOCHS.nonce_of(b"not json") is None
    assert not HELD.is_barrier("barrier|x") and EPOCHS.is_barrier("sync|7")


async def _write(log: MemoryLog, *messages: OutgoingMessage) -> None:
    writer = await log.writer(TOPIC)
    await writer.send_all([batch_layout.entry(list(messages))])[1]


def _record(key: str) -> OutgoingMessage:
    return OutgoingMessage(key.encode(), {}, key, None)


async def test_a_reader_stops_at_its_own_barrier_and_skips_others() -> None:
    log = MemoryLog()
    await _write(log, _record("a"), HELD.message("someone else's"), _record("b"))
    await _write(log, HELD.message("mine"), _record("after"))
    seen: list[str] = []
    reader = await log.reader(TOPIC, None, compacted=True)

    def visit(msg: StoredMessage) -> None:
        seen.append(msg.partition_key)

    await asyncio.wait_for(read_to_barrier(reader, HELD, "mine", visit), 5)
    assert seen == ["a", "b"]  # not past its own barrier, and no barrier visited


async def test_a_tail_resolves_the_barrier_it_reads_back() -> None:
    barriers = Barriers(EPOCHS)
    marker, read_back = barriers.written("1")
    assert marker.payload is not None
    stored = _stored(marker.partition_key, marker.payload)
    assert barriers.read(stored) and read_back.done()
    barriers.forget(read_back)
    record = _stored("persistent://t-partition-0", b"{}")
    assert not barriers.read(record)


def _stored(key: str, payload: bytes) -> StoredMessage:
    return StoredMessage(Position(1, 0, 0), payload, False, {}, key, 0, 0)


@pytest.mark.parametrize("fmt", [HELD, EPOCHS], ids=["held", "epochs"])
def test_a_barrier_reads_back_as_its_own_nonce(fmt: BarrierFormat) -> None:
    message = fmt.message("n1", owner="0")
    assert message.payload is not None
    assert fmt.is_barrier(message.partition_key)
    assert fmt.nonce_of(message.payload) == "n1"
