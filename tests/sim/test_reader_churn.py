"""How many readers the partition log opens (issue 18). On Pulsar every reader is
a subscription created and deleted on the broker; a Pulsar that `make run`
started ran out of heap after kop had created 79,000 of them in 75 minutes,
18 a second. Readers are opened per spell of reading, never per record."""

from __future__ import annotations

import asyncio

from kop.log.partition_log import LogSettings
from kop.log.tail import KEEP_READER_MESSAGES
from kop.protocol.errors import KafkaError
from kop.storage.types import OutgoingEntry, OutgoingMessage
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, Node, batch
from tests.sim.memory_log import MemoryLog

SETTINGS = LogSettings(write_timeout_s=5)


def _started(loop: SimLoop, log: MemoryLog) -> Node:
    node = Node(loop, log, SETTINGS)
    node.start()
    assert node.produce(batch([b"first"])) == 0
    return node


async def _native(log: MemoryLog, value: bytes, seq: int) -> None:
    """Another writer (a Pulsar application) appends one entry."""
    log.topic(TOPIC).append([OutgoingEntry.of(OutgoingMessage(value, {}, None, None))], "app", seq)


def _values(node: Node) -> list[bytes | None]:
    got = node.fetch(0)
    assert not isinstance(got, KafkaError)
    assert [o for o, _ in got] == list(range(len(got)))  # dense
    return [v for _, v in got]


def test_records_trickling_in_do_not_open_a_reader_each(loop: SimLoop) -> None:
    """A producer that pauses after every record: each pause ends a spell of
    counting receipts, and the follower reads on with the reader it kept."""
    log = MemoryLog()
    node = _started(loop, log)
    opened = log.readers_opened[TOPIC]
    for i in range(50):
        assert node.produce(batch([b"t%d" % i])) == 1 + i
        loop.run(asyncio.sleep(1.0), within=2)
    assert log.readers_opened[TOPIC] - opened <= 1
    assert _values(node) == [b"first", *(b"t%d" % i for i in range(50))]


def test_another_writer_between_trickled_records_is_read_by_the_kept_reader(
    loop: SimLoop,
) -> None:
    log = MemoryLog()
    node = _started(loop, log)
    opened = log.readers_opened[TOPIC]
    expected: list[bytes | None] = [b"first"]
    for i in range(10):
        assert node.produce(batch([b"k%d" % i])) == len(expected)
        expected.append(b"k%d" % i)
        loop.run(asyncio.sleep(0.5), within=2)
        loop.run(_native(log, b"app%d" % i, i), within=1)
        expected.append(b"app%d" % i)
        loop.run(asyncio.sleep(0.5), within=2)
    assert log.readers_opened[TOPIC] - opened <= 1
    assert _values(node) == expected


def test_long_bursts_open_at_most_one_reader_each(loop: SimLoop) -> None:
    """A burst longer than the kept reader may lag closes it (it would be sent
    the whole burst); the next reader opens once the burst is over, not per entry."""
    log = MemoryLog()
    node = _started(loop, log)
    opened = log.readers_opened[TOPIC]
    bursts, size = 4, 3 * KEEP_READER_MESSAGES
    for b in range(bursts):
        offsets = node.produce_stream([batch([b"b%d-%d" % (b, i)]) for i in range(size)])
        assert offsets == list(range(1 + b * size, 1 + (b + 1) * size))
        loop.run(asyncio.sleep(1.0), within=2)
    assert log.readers_opened[TOPIC] - opened <= bursts
    values = _values(node)
    assert len(values) == 1 + bursts * size
    assert values[-1] == b"b%d-%d" % (bursts - 1, size - 1)
