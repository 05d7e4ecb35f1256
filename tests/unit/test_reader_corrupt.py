"""A MESSAGE frame that fails its checksum is read again, not the end of the reader
(issue 19, 8). The bytes went wrong between the bookie and kop (a NIC, a proxy, a
bit flip); the stored entry is fine, so the reader subscribes again at the entry
it did not get, as the Java client re-reads after discarding one. An entry that
keeps arriving corrupt stops the reader with the error: kop cannot skip it, its
offset is counted."""

from __future__ import annotations

import asyncio

import pytest

from kop.pulsar.wire.errors import CorruptEntryError
from kop.pulsar.wire.read_ahead import ReadAheadBudget
from tests.unit.scripted_pulsar import Broker, entry, open_reader


def _topic(n: int) -> Broker:
    return Broker(entries=[entry(f"entry-{i}".encode()) for i in range(n)])


async def test_a_checksum_mismatch_is_read_again_from_that_entry() -> None:
    broker = _topic(10)
    broker.entries[4].corrupt_times = 1
    budget = ReadAheadBudget()
    reader = await open_reader(broker, budget=budget)
    async with asyncio.timeout(5):
        got = [await reader.read() for _ in range(10)]
    assert [r.payload for r in got] == [f"entry-{i}".encode() for i in range(10)]
    assert [r.entry for r in got] == list(range(10))
    # Subscribed again at the corrupt entry, under a new consumer id, so whatever the
    # old consumer still had on the wire is not taken for the new one's.
    assert len(broker.subscribes) == 2
    (first_id, _), (second_id, start) = broker.subscribes
    assert start == (1, 4) and second_id != first_id
    await reader.close()
    assert (budget.held, budget.reserved) == (0, 0)


async def test_corrupt_twice_in_a_row_is_still_read() -> None:
    broker = _topic(6)
    broker.entries[0].corrupt_times = 2
    broker.entries[5].corrupt_times = 1
    reader = await open_reader(broker)
    async with asyncio.timeout(5):
        got = [(await reader.read()).payload for _ in range(6)]
    assert got == [f"entry-{i}".encode() for i in range(6)]
    await reader.close()


async def test_an_entry_that_is_always_corrupt_fails_the_reader() -> None:
    broker = _topic(3)
    broker.entries[1].corrupt_times = 1_000
    reader = await open_reader(broker)
    async with asyncio.timeout(10):
        assert (await reader.read()).entry == 0
        with pytest.raises(CorruptEntryError, match="checksum"):
            await reader.read()
    assert 2 < len(broker.subscribes) < 10  # a few tries, not a loop
    await reader.close()
