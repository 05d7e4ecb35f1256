"""Transactions in a partition's log, over the in-memory storage, in both entry
formats: transactional batches hold the last stable offset at their transaction's
first offset until its marker; a marker takes an offset and is served as the
control batch Kafka consumers skip; an abort leaves the aborted transaction a fetch
lists; a marker of a later epoch fences the producer's old epoch at the partition;
and a kop that crashed before it flushed anything rebuilds all of it from the log."""

from __future__ import annotations

import pytest

from kop.entries.formats import EntryFormat
from kop.log.partition_log import LogSettings
from kop.log.txn_index import Aborted
from kop.protocol.control import Marker, marker_batch
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import Record, build_batch, read_header
from kop.storage.types import StorageError
from kop.txn.markers import TxnMarkers
from tests.sim.clock import SimLoop
from tests.sim.harness import TS, Node
from tests.sim.memory_log import MemoryLog

PID = 5


def txn_batch(values: list[bytes], seq: int, epoch: int = 0) -> bytes:
    records = [Record(i, TS + i, None, v) for i, v in enumerate(values)]
    return build_batch(records, producer_id=PID, producer_epoch=epoch, base_sequence=seq,
                       transactional=True)  # fmt: skip


def plain(values: list[bytes]) -> bytes:
    return build_batch([Record(i, TS + i, None, v) for i, v in enumerate(values)])


def marker(commit: bool, epoch: int = 0) -> bytes:
    return marker_batch(Marker(commit, PID, epoch, coordinator_epoch=0), TS)


def node(loop: SimLoop, log: MemoryLog) -> Node:
    n = Node(loop, log, LogSettings(write_timeout_s=5.0))
    n.start()
    return n


@pytest.mark.parametrize("fmt", [EntryFormat.PULSAR, EntryFormat.KAFKA])
def test_an_aborted_transaction_holds_then_releases_the_stable_offset(
    loop: SimLoop, fmt: EntryFormat
) -> None:
    log = MemoryLog()
    n = node(loop, log)
    assert n.produce(txn_batch([b"a", b"b", b"c"], seq=0), fmt) == 0
    assert n.produce(plain([b"x", b"y"]), fmt) == 3
    plog = n.partition()
    assert (plog.high_watermark, plog.last_stable) == (5, 0)
    assert n.produce(marker(commit=False), fmt) == 5
    assert (plog.high_watermark, plog.last_stable) == (6, 6)
    assert plog.txns.aborted(0, 6) == [Aborted(0, PID, 5)]
    served = n.fetch_records(0)
    assert not isinstance(served, KafkaError)
    assert [r.offset for r in served] == [0, 1, 2, 3, 4, 5]  # the marker is a record too
    control = loop.run(plog.read(5, 1 << 20), within=10)
    assert read_header(control).is_control

    # a new transaction of the producer, committed
    assert n.produce(txn_batch([b"d"], seq=3), fmt) == 6
    assert plog.last_stable == 6
    assert n.produce(marker(commit=True), fmt) == 7
    assert plog.last_stable == 8
    assert plog.txns.aborted(6, 8) == []

    n.crash()  # before anything was flushed: the log is read again from its start
    again = node(loop, log).partition()
    assert (again.high_watermark, again.last_stable) == (8, 8)
    assert again.txns.aborted(0, 8) == [Aborted(0, PID, 5)]


@pytest.mark.parametrize("fmt", [EntryFormat.PULSAR, EntryFormat.KAFKA])
def test_a_marker_of_a_later_epoch_fences_the_zombie_at_the_partition(
    loop: SimLoop, fmt: EntryFormat
) -> None:
    n = node(loop, MemoryLog())
    assert n.produce(txn_batch([b"a"], seq=0, epoch=0), fmt) == 0
    assert n.produce(marker(commit=False, epoch=1), fmt) == 1  # timed out: fenced, aborted
    zombie = n.produce(txn_batch([b"late"], seq=1, epoch=0), fmt)
    assert isinstance(zombie, KafkaError) and zombie.code is ErrorCode.invalid_producer_epoch
    assert n.produce(txn_batch([b"new"], seq=0, epoch=1), fmt) == 2
    assert n.partition().last_stable == 2


@pytest.mark.parametrize("fmt", [EntryFormat.PULSAR, EntryFormat.KAFKA])
def test_a_restart_resumes_open_and_aborted_transactions_from_the_index(
    loop: SimLoop, fmt: EntryFormat
) -> None:
    """The follower resumes after the persisted mark, past the batches that opened a
    transaction and the marker that aborted another: both come from the index."""
    log = MemoryLog()
    n = node(loop, log)
    assert n.produce(txn_batch([b"a", b"b"], seq=0), fmt) == 0
    assert n.produce(marker(commit=False), fmt) == 2
    assert n.produce(txn_batch([b"c"], seq=2), fmt) == 3  # open across the restart
    n.stop()  # a clean stop flushes the index, its mark after offset 3
    again = node(loop, log).partition()
    assert again.txns.aborted(0, 4) == [Aborted(0, PID, 2)]
    assert (again.high_watermark, again.last_stable) == (4, 3)
    assert again.txns.open_transactions() == {PID: 3}


def test_the_coordinators_markers_close_the_transaction_in_each_partition(
    loop: SimLoop,
) -> None:
    """TxnMarkers writes through each partition's own log: the marker takes the
    next offset and the last stable offset moves past the transaction; a partition
    another instance serves is refused (the coordinator retries it)."""
    other = "persistent://public/default/u-partition-0"
    n = node(loop, MemoryLog())
    assert n.produce(txn_batch([b"a"], seq=0)) == 0
    assert n.produce(txn_batch([b"b"], seq=0), topic=other) == 0
    assert n.manager is not None
    markers = TxnMarkers(n.manager, lambda name: name != other, lambda: TS)
    t = "persistent://public/default/t-partition-0"
    loop.run(markers.write(frozenset({(t, 0)}), Marker(True, PID, 0, 0)), within=10)
    assert (n.partition().high_watermark, n.partition().last_stable) == (2, 2)
    with pytest.raises(StorageError):
        loop.run(markers.write(frozenset({(other, 0)}), Marker(True, PID, 0, 0)), within=10)
    assert n.partition(other).last_stable == 0


@pytest.mark.parametrize("fmt", [EntryFormat.PULSAR, EntryFormat.KAFKA])
def test_a_marker_of_an_older_epoch_than_the_partition_has_seen_is_refused(
    loop: SimLoop, fmt: EntryFormat
) -> None:
    """Issue 33, finding 5 (the producer-epoch half): a partition took a marker of any
    epoch, so a stale COMMIT of an epoch the coordinator had since fenced ended (and
    made readable) what a later epoch wrote. Kafka's partition refuses a marker older
    than the producer's epoch there (INVALID_PRODUCER_EPOCH); the coordinator that sent
    it takes that as done (a later epoch's marker ends the transaction), not a retry."""
    n = node(loop, MemoryLog())
    assert n.produce(txn_batch([b"a"], seq=0, epoch=3), fmt) == 0
    stale = n.produce(marker(commit=True, epoch=2), fmt)
    assert isinstance(stale, KafkaError) and stale.code is ErrorCode.invalid_producer_epoch
    assert n.partition().last_stable == 0  # still open: nothing was committed
    assert n.produce(marker(commit=False, epoch=3), fmt) == 1
    assert n.partition().txns.aborted(0, 2) == [Aborted(0, PID, 1)]
    assert n.manager is not None
    markers = TxnMarkers(n.manager, lambda name: True, lambda: TS)
    t = "persistent://public/default/t-partition-0"
    loop.run(markers.write(frozenset({(t, 0)}), Marker(True, PID, 2, 0)), within=10)  # done
    assert n.partition().high_watermark == 2  # and nothing written
