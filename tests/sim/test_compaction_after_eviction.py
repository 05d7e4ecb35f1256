"""Compaction after Pulsar deleted the ledger holding kop's last compaction horizon,
cursors or not (an admin's truncate, a backlog quota that evicts: every cursor, kop's
pin included, moved to the end). Found on a real Pulsar (two rounds of write, compact,
truncate): every later cycle counted the new live entries from the old horizon, met
the trim ("expected (91, 0), found (95, 0)") and failed, for good; nothing written
afterwards was ever noted, and once its ledger went too, a consumer stalled below it.
The cycle now counts from where the live data begins."""

from __future__ import annotations

from kop.entries.formats import EntryFormat
from kop.log.partition_log import PartitionLog
from kop.log.settings import LogSettings
from kop.protocol.records import Record, build_batch, iter_records, read_header
from tests.sim.clock import SimLoop
from tests.sim.harness import TOPIC, TS, Node
from tests.sim.memory_compaction import MemoryCompaction
from tests.sim.memory_log import MemoryLog

SETTINGS = LogSettings(checkpoint_interval=3, write_timeout_s=5, retention_check_s=5,
                       compaction_interval_s=3600)  # fmt: skip


def _evict(log: MemoryLog) -> None:
    """Every cursor to the end, then every closed ledger deleted (Pulsar's truncate)."""
    topic = log.topic(TOPIC)
    topic.roll()
    topic.cursors.clear()
    topic.trim(len(topic.ledgers))


def _write(node: Node, *pairs: tuple[bytes, bytes | None]) -> None:
    records = [Record(i, TS + i, k, v) for i, (k, v) in enumerate(pairs)]
    assert isinstance(node.produce(build_batch(records), EntryFormat.PULSAR), int)


def _cycle(loop: SimLoop, plog: PartitionLog) -> None:
    assert plog.compacted is not None
    loop.run(plog.compacted.compactor.cycle(), within=60)


def _read(loop: SimLoop, plog: PartitionLog, offset: int) -> list[tuple[int, bytes | None]]:
    """What a consumer gets from `offset`; it must reach the high watermark."""

    async def go() -> list[tuple[int, bytes | None]]:
        out, at = [], offset
        while at < plog.high_watermark:
            raw = await plog.read(at, 1 << 20)
            if not raw:
                break
            pos = 0
            while pos < len(raw):
                head = read_header(raw, pos)
                batch = iter_records(raw[pos : pos + head.length])
                out += [(r.offset, r.key) for r in batch if r.offset >= offset]
                at = head.base_offset + head.last_offset_delta + 1
                pos += head.length
        assert at == plog.high_watermark, f"stalled at {at} below {plog.high_watermark}"
        return out

    return loop.run(go(), within=60)


def test_compaction_goes_on_after_the_horizons_ledger_was_evicted() -> None:
    loop, log = SimLoop(), MemoryLog()
    node = Node(loop, log, SETTINGS, MemoryCompaction(log), compacted=True)
    node.start()
    try:
        plog = node.partition()
        _write(node, (b"a", b"1"), (b"b", b"1"), (b"a", b"2"))
        _cycle(loop, plog)
        _evict(log)
        loop.settle(SETTINGS.retention_check_s + 1)
        assert plog.compacted is not None and plog.index.data_start == 3
        _write(node, (b"c", b"1"))
        _cycle(loop, plog)
        assert plog.compacted.compactor.noted_offset == 4  # the new record is noted
        _evict(log)
        loop.settle(SETTINGS.retention_check_s + 1)
        assert plog.index.data_start == 4
        assert _read(loop, plog, 0) == [(1, b"b"), (2, b"a"), (3, b"c")]
        assert _read(loop, plog, 3) == [(3, b"c")]  # the last survivor, read on its own
    finally:
        loop.shutdown()


def test_a_consumer_passes_trailing_offsets_compaction_emptied() -> None:
    """The last records are a key and its tombstone: Pulsar's compaction removes
    both, and once retention deleted the live ledgers nothing is left from there to
    the high watermark. A consumer gets a batch spanning the gap and reaches it."""
    loop, log = SimLoop(), MemoryLog()
    node = Node(loop, log, SETTINGS, MemoryCompaction(log), compacted=True)
    node.start()
    try:
        plog = node.partition()
        _write(node, (b"a", b"1"), (b"b", b"1"))
        _write(node, (b"b", None))
        _cycle(loop, plog)
        _evict(log)
        loop.settle(SETTINGS.retention_check_s + 1)
        assert plog.index.data_start == plog.high_watermark == 3
        assert _read(loop, plog, 0) == [(0, b"a")]
        assert _read(loop, plog, 1) == []  # b and its tombstone: a gap to the end
    finally:
        loop.shutdown()
