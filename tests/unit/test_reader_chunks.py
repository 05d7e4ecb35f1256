"""A reader hands a chunked message on as one entry (issue 19, 5): at its first
chunk's place (so a read starting there meets all its chunks), decompressed as a
whole, its chunks' bytes in the read-ahead budget until it is read; and an entry a
reader cannot put together is a corrupt entry in its place, never a stop."""

from __future__ import annotations

import asyncio
import zlib

from kop.pulsar.client import stored_entry
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.read_ahead import ReadAheadBudget
from tests.unit.scripted_pulsar import Broker, Stored, entry, open_reader
from tests.unit.test_chunks import cut


def _stored(entries: list[object]) -> list[Stored]:
    return [Stored(e.metadata, e.payload) for e in entries]  # type: ignore[attr-defined]


def _topic() -> Broker:
    big = bytes(range(256)) * 40  # 10 KiB
    return Broker(
        entries=[
            entry(b"small-0"),
            *_stored(cut("native", 1, big, 4096)),  # entries 1, 2, 3
            entry(b"small-2"),
        ]
    )


async def test_a_chunked_message_is_one_entry_at_its_first_chunk() -> None:
    broker = _topic()
    budget = ReadAheadBudget()
    reader = await open_reader(broker, budget=budget)
    async with asyncio.timeout(5):
        got = [await reader.read() for _ in range(3)]
    assert [(r.entry, r.corrupt) for r in got] == [(0, None), (1, None), (4, None)]
    assert got[1].payload == bytes(range(256)) * 40
    assert stored_entry(got[1]).count == 1
    assert not await reader.has_message_available()
    await reader.close()
    assert (budget.held, budget.reserved) == (0, 0)


async def test_a_read_from_its_place_gets_it_whole_and_from_a_later_chunk_marked() -> None:
    reader = await open_reader(_topic(), start=(1, 1))
    async with asyncio.timeout(5):
        first = await reader.read()
    assert (first.entry, first.corrupt, len(first.payload)) == (1, None, 10240)
    await reader.close()
    # From its second chunk the message cannot be put together: it still takes its
    # one place (offsets count entries), as a corrupt entry, and reading goes on.
    reader = await open_reader(_topic(), start=(1, 2))
    async with asyncio.timeout(5):
        got = [await reader.read() for _ in range(2)]
    assert got[0].entry == 2 and got[0].corrupt and "first chunks" in got[0].corrupt
    assert stored_entry(got[0]).count == 1
    assert (got[1].entry, got[1].payload) == (4, b"small-2")
    await reader.close()


async def test_compressed_chunks_decompress_as_one_message() -> None:
    body = b"kop-chunk " * 5000
    packed = zlib.compress(body)  # the whole message, then cut: no chunk inflates alone
    chunks = _stored(cut("native", 0, packed, 100))
    for s in chunks:
        s.metadata.compression = pb.ZLIB
        s.metadata.uncompressed_size = len(body)
    broker = Broker(entries=[*chunks, entry(b"after")])
    reader = await open_reader(broker)
    async with asyncio.timeout(5):
        whole, after = await reader.read(), await reader.read()
    assert (whole.corrupt, whole.payload) == (None, body)
    assert after.payload == b"after"
    await reader.close()


async def test_chunks_a_producer_abandoned_at_the_end_are_nothing_to_wait_for() -> None:
    """The tail follower asks whether anything is left to read before it reports the
    partition caught up: chunks of a message that will never complete are not."""
    broker = Broker(entries=[entry(b"one"), *_stored(cut("native", 1, b"x" * 100, 40))[:2]])
    budget = ReadAheadBudget()
    reader = await open_reader(broker, budget=budget)
    async with asyncio.timeout(5):
        assert (await reader.read()).payload == b"one"
        while broker._cursor < 3:
            await asyncio.sleep(0)
    assert not await reader.has_message_available()
    assert budget.held > 0  # the two chunks, until the message completes or is dropped
    await reader.close()
    assert budget.held == 0
