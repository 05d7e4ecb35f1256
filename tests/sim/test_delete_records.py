"""DeleteRecords over the real log code and the in-memory storage: the floor kop
keeps (Pulsar cannot delete single messages) moves the log start as Kafka's
DeleteRecords does, survives restarts and crashes, and composes with Pulsar's
own retention. Each test here fails on a log without the floor."""

from __future__ import annotations

import asyncio
import zlib

import pytest

from kop.entries.formats import EntryFormat
from kop.log.partition_log import LogSettings, PartitionLog
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.types import StorageError
from tests.sim.clock import SimLoop
from tests.sim.harness import INDEX_TOPIC, TOPIC, TS, Node, batch
from tests.sim.memory_log import MemoryLog, MemoryWriter

HISTORY_ONLY = LogSettings(checkpoint_interval=2, tail_buffer_bytes=0, write_timeout_s=5)
FORMATS = [EntryFormat.PULSAR, EntryFormat.KAFKA]


def _values(prefix: str, n: int) -> list[bytes | None]:
    return [f"{prefix}{i}".encode() for i in range(n)]


def _expect(start: int, values: list[bytes | None]) -> list[tuple[int, bytes | None]]:
    return [(start + i, v) for i, v in enumerate(values)]


def _delete(node: Node, offset: int) -> int | KafkaError | StorageError:
    """One partition of a DeleteRecords: the new low watermark, or the error."""
    plog = node.partition()

    async def go() -> int | KafkaError | StorageError:
        try:
            return await plog.delete_records(offset)
        except (KafkaError, StorageError) as exc:
            return exc

    return node.loop.run(go(), within=node.settings.write_timeout_s + 10)


def _out_of_range(got: object) -> bool:
    return isinstance(got, KafkaError) and got.code == ErrorCode.offset_out_of_range


def _index_shard() -> str:
    return f"{INDEX_TOPIC}-{zlib.crc32(TOPIC.encode()) % 16}"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("settings", [LogSettings(), HISTORY_ONLY], ids=["tail", "history"])
def test_the_floor_moves_the_log_start_and_later_offsets_stay(
    loop: SimLoop, fmt: EntryFormat, settings: LogSettings
) -> None:
    # In the `kafka` format offset 4 is inside a stored batch of 10: the floor need
    # not fall on an entry start.
    node = Node(loop, MemoryLog(), settings)
    node.start()
    assert node.produce(batch(_values("a", 10)), fmt) == 0

    assert _delete(node, 4) == 4
    assert node.partition().log_start == 4
    assert _out_of_range(node.fetch(0))
    assert _out_of_range(node.fetch(3))
    assert node.fetch(4) == _expect(4, _values("a", 10)[4:])
    plog = node.partition()
    assert loop.run(plog.offset_for_time(TS), within=10) == (4, TS + 4)  # not below it
    assert node.produce(batch([b"next"]), fmt) == 10
    assert node.fetch(4) == _expect(4, [*_values("a", 10)[4:], b"next"])
    assert node.partition().high_watermark == 11


def test_minus_one_deletes_up_to_the_high_watermark(loop: SimLoop) -> None:
    node = Node(loop, MemoryLog(), LogSettings())
    node.start()
    node.produce(batch(_values("a", 5)))
    assert _delete(node, -1) == 5
    assert node.partition().log_start == node.partition().high_watermark == 5
    assert node.fetch(5) == []
    assert _out_of_range(node.fetch(4))
    assert node.produce(batch([b"next"])) == 5
    assert node.fetch(5) == [(5, b"next")]


def test_a_floor_above_the_high_watermark_is_refused(loop: SimLoop) -> None:
    node = Node(loop, MemoryLog(), LogSettings())
    node.start()
    node.produce(batch(_values("a", 5)))
    assert _out_of_range(_delete(node, 6))
    assert _out_of_range(_delete(node, -2))
    assert node.partition().log_start == 0
    assert node.fetch(0) == _expect(0, _values("a", 5))


def test_a_lower_offset_does_not_move_the_start_back(loop: SimLoop) -> None:
    log = MemoryLog()
    node = Node(loop, log, LogSettings())
    node.start()
    node.produce(batch(_values("a", 10)))
    assert _delete(node, 6) == 6
    assert _delete(node, 3) == 6  # Kafka answers the current low watermark
    assert node.partition().log_start == 6
    assert _out_of_range(node.fetch(3))
    node.stop()

    again = Node(loop, log, LogSettings())
    again.start()
    assert again.partition().log_start == 6  # the lower one was not persisted over it


@pytest.mark.parametrize("stop", ["clean", "crash"])
def test_the_floor_survives_a_restart(loop: SimLoop, stop: str) -> None:
    # A crash right after the answer: the floor is persisted before DeleteRecords is
    # answered, not by the periodic flush (which has not run: the mark is older).
    log = MemoryLog()
    node = Node(loop, log, LogSettings(checkpoint_interval=3))
    node.start()
    node.produce(batch(_values("a", 10)))
    assert _delete(node, 7) == 7
    if stop == "clean":
        node.stop()
    else:
        node.crash()

    again = Node(loop, log, LogSettings(checkpoint_interval=3))
    again.start()
    assert again.partition().log_start == 7
    assert again.partition().high_watermark == 10
    assert _out_of_range(again.fetch(6))
    assert again.fetch(7) == _expect(7, _values("a", 10)[7:])
    assert again.produce(batch([b"next"])) == 10


def _five_records_and_a_stalled_index(
    loop: SimLoop, write_timeout_s: float
) -> tuple[Node, PartitionLog, MemoryWriter]:
    """A partition holding a0..a4 whose offset-index writes (where floors go) stall."""
    log = MemoryLog()
    node = Node(loop, log, LogSettings(write_timeout_s=write_timeout_s))
    node.start()
    node.produce(batch(_values("a", 5)))
    shard = loop.run(log.writer(_index_shard()), within=5)
    shard.stall()
    return node, node.partition(), shard


def test_the_answer_waits_until_the_floor_is_persisted(loop: SimLoop) -> None:
    _node, plog, shard = _five_records_and_a_stalled_index(loop, write_timeout_s=30)
    pending = loop.create_task(plog.delete_records(3))
    loop.settle(5)
    assert not pending.done()
    assert plog.log_start == 0  # not applied before it is persisted
    shard.unstall()
    assert loop.run(pending, within=5) == 3
    assert plog.log_start == 3


def test_a_floor_that_cannot_be_persisted_is_not_applied(loop: SimLoop) -> None:
    node, plog, _ = _five_records_and_a_stalled_index(loop, write_timeout_s=5)
    got = _delete(node, 3)
    assert isinstance(got, KafkaError) and got.code == ErrorCode.request_timed_out
    assert plog.log_start == 0
    assert node.fetch(0) == _expect(0, _values("a", 5))


def test_the_work_finishes_when_the_caller_goes_away(loop: SimLoop) -> None:
    # A client that disconnects (or whose request timeout passes) does not leave a
    # floor persisted but not applied.
    _node, plog, shard = _five_records_and_a_stalled_index(loop, write_timeout_s=30)
    caller = loop.create_task(plog.delete_records(2))
    loop.settle(1)
    caller.cancel()
    loop.run_until_complete(asyncio.gather(caller, return_exceptions=True))
    shard.unstall()
    loop.settle(1)
    assert plog.log_start == 2


def _two_ledgers(loop: SimLoop) -> tuple[MemoryLog, Node]:
    """a0..a4 in the first ledger, b0..b4 (offsets 5..9) in the second."""
    log = MemoryLog()
    node = Node(loop, log, HISTORY_ONLY)
    node.start()
    node.produce(batch(_values("a", 5)))
    log.topic(TOPIC).roll()
    node.produce(batch(_values("b", 5)))
    return log, node


def test_retention_past_the_floor_still_moves_the_start(loop: SimLoop) -> None:
    log, node = _two_ledgers(loop)
    assert _delete(node, 2) == 2
    log.topic(TOPIC).trim(1)
    loop.settle(2 * HISTORY_ONLY.retention_check_s)  # the periodic retention check
    assert node.partition().log_start == 5
    assert _out_of_range(node.fetch(2))
    assert node.fetch(5) == _expect(5, _values("b", 5))
    assert _delete(node, 3) == 5  # below the start: nothing to do


def test_retention_below_the_floor_keeps_the_floor_and_reads_work(loop: SimLoop) -> None:
    # Pulsar deletes the ledger under the floor: the floor stays the log start, and
    # the checkpoints of the deleted ledger are pruned (reads never start from them).
    log, node = _two_ledgers(loop)
    assert _delete(node, 7) == 7
    log.topic(TOPIC).trim(1)
    loop.settle(2 * HISTORY_ONLY.retention_check_s)
    plog = node.partition()
    assert plog.log_start == 7
    assert plog.index.data_start == 5
    assert node.fetch(7) == _expect(7, _values("b", 5)[2:])
    assert _out_of_range(node.fetch(5))
    node.stop()

    again = Node(loop, log, HISTORY_ONLY)
    again.start()
    assert again.partition().log_start == 7
    assert again.fetch(7) == _expect(7, _values("b", 5)[2:])


def test_a_deleted_topic_forgets_its_floor(loop: SimLoop) -> None:
    log = MemoryLog()
    node = Node(loop, log, LogSettings())
    node.start()
    node.produce(batch(_values("a", 5)))
    assert _delete(node, 4) == 4
    assert node.manager is not None
    loop.run(node.manager.drop([TOPIC]), within=30)
    del log.topics[TOPIC]  # Pulsar deleted the topic; it is created again
    assert node.produce(batch([b"new"])) == 0
    assert node.partition().log_start == 0
    assert node.fetch(0) == [(0, b"new")]
