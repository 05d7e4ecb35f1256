"""The offset model: whatever the mix of kafka-format batches and pulsar-format
messages, however entries are batched, wherever checkpoints fall and however
often the owner restarts, offsets equal a from-scratch count of the log."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kop.log.offset_index import Checkpoint, OffsetIndex, Position

# A message is (position, records it counts for, its max timestamp).
Message = tuple[Position, int, int]


@st.composite
def pulsar_logs(draw: st.DrawFn) -> list[Message]:
    log: list[Message] = []
    ledger, entry, ts = 1, 0, 1000
    for _ in range(draw(st.integers(0, 60))):
        if draw(st.integers(0, 9)) == 0:
            ledger, entry = ledger + draw(st.integers(1, 3)), 0
        batched = draw(st.booleans())
        size = draw(st.integers(1, 5)) if batched else 1
        for b in range(size):
            kafka_format = draw(st.booleans())
            count = draw(st.integers(1, 20)) if kafka_format else 1
            ts += draw(st.integers(0, 50))
            log.append(((ledger, entry, b if batched else -1), count, ts))
        entry += 1
    return log


def from_scratch(log: list[Message]) -> list[int]:
    out, total = [], 0
    for _pos, count, _ts in log:
        out.append(total)
        total += count
    return out


def read_from(log: list[Message], start: Position | None) -> int:
    """Index of the first message a reader starting at `start`'s entry sees."""
    if start is None:
        return 0
    return next(i for i, (pos, _, _) in enumerate(log) if pos[:2] == start[:2])


@settings(max_examples=300, deadline=None)
@given(
    log=pulsar_logs(),
    interval=st.integers(1, 40),
    stops=st.lists(st.integers(0, 400), max_size=6),
    flush_lag=st.integers(0, 3),
)
def test_offsets_survive_restarts_and_match_a_full_count(
    log: list[Message], interval: int, stops: list[int], flush_lag: int
) -> None:
    truth = from_scratch(log)
    persisted: list[Checkpoint] = []
    for stop in [*sorted(stops), len(log)]:
        index = OffsetIndex(interval, persisted)
        resume = index.resume_point
        created: list[Checkpoint] = []
        i = read_from(log, resume.position if resume else None)
        while i < min(stop, len(log)):
            pos, count, ts = log[i]
            base, checkpoint = index.observe(pos, count, ts)
            assert base == truth[i]
            if checkpoint is not None:
                created.append(checkpoint)
            i += 1
        # A crash loses the last few unflushed checkpoints, never anything else.
        persisted = sorted({*persisted, *created[: max(0, len(created) - flush_lag)]})
        total = truth[-1] + log[-1][1] if log else 0
        if i == len(log):
            assert index.next_offset == total


@settings(max_examples=200, deadline=None)
@given(log=pulsar_logs(), interval=st.integers(1, 30), data=st.data())
def test_floor_finds_a_checkpoint_at_or_below_and_it_is_true(
    log: list[Message], interval: int, data: st.DataObject
) -> None:
    truth = from_scratch(log)
    index = OffsetIndex(interval)
    for pos, count, ts in log:
        index.observe(pos, count, ts)
    if not log:
        assert index.floor(0) is None
        return
    by_position = {pos: truth[i] for i, (pos, _, _) in enumerate(log)}
    target = data.draw(st.integers(0, index.next_offset))
    found = index.floor(target)
    assert found is not None  # the first message is always a checkpoint
    assert found.offset <= target
    assert by_position[found.position] == found.offset
    assert found.position[2] <= 0  # checkpoints sit at entry starts


@settings(max_examples=200, deadline=None)
@given(log=pulsar_logs(), interval=st.integers(1, 30), data=st.data())
def test_time_floor_never_skips_a_matching_record(
    log: list[Message], interval: int, data: st.DataObject
) -> None:
    truth = from_scratch(log)
    index = OffsetIndex(interval)
    for pos, count, ts in log:
        index.observe(pos, count, ts)
    target = data.draw(st.integers(0, 5000))
    found = index.floor_for_time(target)
    first_match = next((truth[i] for i, (_, _, ts) in enumerate(log) if ts >= target), None)
    if found is not None and first_match is not None:
        assert found.offset <= first_match


def test_rereading_an_observed_position_is_refused() -> None:
    index = OffsetIndex(10)
    index.observe((1, 0, -1), 3, 0)
    try:
        index.observe((1, 0, -1), 3, 0)
    except ValueError:
        return
    raise AssertionError("a re-read position must not be counted twice")


def test_checkpoint_disagreeing_with_count_is_detected() -> None:
    index = OffsetIndex(10, [Checkpoint(5, (1, 3, -1))])
    assert index.next_offset == 5
    base, _ = index.observe((1, 3, -1), 2, 0)
    assert base == 5 and index.next_offset == 7
