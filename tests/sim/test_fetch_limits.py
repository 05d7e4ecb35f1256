"""A read's size limit, as Kafka applies it (KIP-74): batches are served from the
one holding the fetch offset, each only if it fits in what is left of the limit;
only the first batch of a whole response may be larger (so a consumer always
progresses). A client that bounds its memory with `max.partition.fetch.bytes`
relies on this: a 10-byte batch followed by a 50 KB one answers a 4,000-byte
fetch with the 10 bytes. Checked in both entry formats, from the tail buffer and
from Pulsar (tail buffer off), against a model of the batches written."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kop.entries.formats import EntryFormat
from kop.log.partition_log import PartitionLog
from kop.log.settings import LogSettings
from tests.sim.clock import SimLoop
from tests.sim.harness import Node, batch, iter_records_all
from tests.sim.memory_log import MemoryLog


def _node(loop: SimLoop, tail: bool) -> Node:
    node = Node(loop, MemoryLog(), LogSettings(tail_buffer_bytes=(64 << 20) if tail else 0))
    node.start()
    return node


def _read(node: Node, offset: int, max_bytes: int, min_one: bool) -> bytes:
    plog: PartitionLog = node.partition()
    return node.loop.run(plog.read(offset, max_bytes, min_one=min_one), within=60)


def _model(sizes: list[tuple[int, int]], offset: int, max_bytes: int, min_one: bool) -> list[int]:
    """Base offsets of the batches Kafka serves, given (base offset, size) of each
    one-record batch written."""
    out: list[int] = []
    total = 0
    for base, size in sizes:
        if base < offset:
            continue
        if (out or not min_one) and total + size > max_bytes:
            break
        out.append(base)
        total += size
    return out


def _bases(data: bytes) -> list[int]:
    """One record per batch here: a record's offset is its batch's base offset."""
    return [r.offset for r in iter_records_all(data)]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    values=st.lists(st.integers(1, 6000), min_size=1, max_size=8),
    fmt=st.sampled_from([EntryFormat.PULSAR, EntryFormat.KAFKA]),
    tail=st.booleans(),
    start=st.integers(0, 7),
    max_bytes=st.integers(0, 20000),
    min_one=st.booleans(),
)
def test_a_read_serves_whole_batches_that_fit_and_one_larger_only_first(
    values: list[int],
    fmt: EntryFormat,
    tail: bool,
    start: int,
    max_bytes: int,
    min_one: bool,
) -> None:
    loop = SimLoop()
    try:
        node = _node(loop, tail)
        sizes: list[tuple[int, int]] = []
        for size in values:
            base = node.produce(batch([b"v" * size]), fmt)
            assert isinstance(base, int)
            one = _read(node, base, 1 << 30, True)
            sizes.append((base, len(one)))
        offset = min(start, len(values) - 1)
        got = _bases(_read(node, offset, max_bytes, min_one))
        assert got == _model(sizes, offset, max_bytes, min_one)
    finally:
        loop.shutdown()


def test_a_small_batch_then_a_large_one_answers_a_small_fetch_with_the_small_one(
    loop: SimLoop,
) -> None:
    """aiokafka's test_large_messages_getmany, in the log: 4,000 bytes asked, 10 + 50 KB
    stored; Kafka serves the 10-byte batch only, and the 50 KB one next time."""
    for fmt in (EntryFormat.PULSAR, EntryFormat.KAFKA):
        for tail in (True, False):
            node = _node(loop, tail)
            small = node.produce(batch([b"s" * 10]), fmt)
            large = node.produce(batch([b"L" * 50_000]), fmt)
            assert (small, large) == (0, 1)
            first = _read(node, 0, 4000, True)
            assert [r.value for r in iter_records_all(first)] == [b"s" * 10]
            assert len(first) < 4000
            second = _read(node, 1, 4000, True)
            assert [r.value for r in iter_records_all(second)] == [b"L" * 50_000]
            assert _read(node, 1, 4000, False) == b""
            node.stop()


def test_lagging_reads_in_small_steps_keep_one_pulsar_reader(loop: SimLoop) -> None:
    """An entry read from Pulsar that did not fit stays with the kept reader, so the
    next fetch (at that entry) continues on it instead of opening a new reader."""
    node = _node(loop, tail=False)
    for _ in range(20):
        node.produce(batch([b"x" * 3000]), EntryFormat.KAFKA)
    plog = node.partition()
    at = 0
    while at < 20:
        got = iter_records_all(_read(node, at, 7000, True))
        assert [r.offset for r in got] == [at, at + 1][: len(got)] and len(got) == 2
        at = got[-1].offset + 1
    assert plog.stats.history_readers == 1
