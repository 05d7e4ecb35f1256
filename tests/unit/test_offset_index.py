"""The offset model: whatever the mix of kafka-format batches and pulsar-format
messages, however entries are batched, wherever checkpoints fall and however
often the owner restarts, offsets equal a from-scratch count of the log."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kop.entries.codec import Entry
from kop.log.counting import Anchor, LogCounter, LogEntry, TrimDetected
from kop.log.offset_index import Checkpoint, Mark, OffsetIndex
from kop.storage.types import Position

# An entry is (position, records it counts for, its max timestamp).
Message = tuple[Position, int, int]


@st.composite
def pulsar_logs(draw: st.DrawFn) -> list[Message]:
    """Entries of one or several messages, each a kafka-format batch (its records)
    or a plain message (one record)."""
    log: list[Message] = []
    ledger, entry, ts = 1, 0, 1000
    for _ in range(draw(st.integers(0, 60))):
        if draw(st.integers(0, 9)) == 0:
            ledger, entry = ledger + draw(st.integers(1, 3)), 0
        count = 0
        for _message in range(draw(st.integers(1, 5))):
            kafka_format = draw(st.booleans())
            count += draw(st.integers(1, 20)) if kafka_format else 1
            ts += draw(st.integers(0, 50))
        log.append((Position(ledger, entry), count, ts))
        entry += 1
    return log


def from_scratch(log: list[Message]) -> list[int]:
    out, total = [], 0
    for _pos, count, _ts in log:
        out.append(total)
        total += count
    return out


def _item(base: int, message: Message) -> LogEntry:
    pos, count, ts = message
    return LogEntry(base, pos, Entry(count, ts, b""))


def read_from(log: list[Message], start: Position | None) -> int:
    """Index of the first message a reader starting at `start`'s entry sees."""
    if start is None:
        return 0
    return next(i for i, (pos, _, _) in enumerate(log) if pos.entry_key == start.entry_key)


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
    mark: Mark | None = None
    for stop in [*sorted(stops), len(log)]:
        index = OffsetIndex(interval, persisted, mark)
        # Resume at the last checkpoint at or before the mark, as the tail follower does.
        resume = next(
            (c for c in reversed(persisted) if mark is None or c.position <= mark.position), None
        )
        i = read_from(log, resume.position if resume else None)
        index.high_watermark = resume.offset if resume else 0
        index.last_position = None
        created: list[Checkpoint] = []
        while i < min(stop, len(log)):
            base = index.high_watermark
            assert base == truth[i]
            index.record(_item(base, log[i]))
            i += 1
        created, _dropped = index.take_changes()
        # A crash loses the last few unflushed checkpoints (and the mark with them).
        kept = created[: max(0, len(created) - flush_lag)]
        persisted = sorted({*persisted, *kept})
        if flush_lag == 0 and index.mark is not None:
            mark = index.mark
        if i == len(log):
            total = truth[-1] + log[-1][1] if log else 0
            assert index.high_watermark == total


@settings(max_examples=200, deadline=None)
@given(log=pulsar_logs(), interval=st.integers(1, 30), data=st.data())
def test_floor_finds_a_checkpoint_at_or_below_and_it_is_true(
    log: list[Message], interval: int, data: st.DataObject
) -> None:
    truth = from_scratch(log)
    index = OffsetIndex(interval)
    for i, message in enumerate(log):
        index.record(_item(truth[i], message))
    if not log:
        assert index.floor(0) is None
        return
    by_position = {pos: truth[i] for i, (pos, _, _) in enumerate(log)}
    target = data.draw(st.integers(0, index.high_watermark))
    found = index.floor(target)
    assert found is not None  # the first entry is always a checkpoint
    assert found.offset <= target
    assert by_position[found.position] == found.offset
    assert found.position.is_entry_start
    # and every ledger's first entry is one (so trims of whole ledgers are exact)
    ledgers_seen = {pos.ledger for pos, _, _ in log}
    assert {c.position.ledger for c in index.checkpoints} == ledgers_seen


@settings(max_examples=200, deadline=None)
@given(log=pulsar_logs(), interval=st.integers(1, 30), data=st.data())
def test_time_floor_never_skips_a_matching_record(
    log: list[Message], interval: int, data: st.DataObject
) -> None:
    truth = from_scratch(log)
    index = OffsetIndex(interval)
    for i, message in enumerate(log):
        index.record(_item(truth[i], message))
    target = data.draw(st.integers(0, 5000))
    found = index.floor_for_time(target)
    first_match = next((truth[i] for i, (_, _, ts) in enumerate(log) if ts >= target), None)
    if first_match is not None and found is not None:
        assert found.offset <= first_match
    slow = [c for c in index.checkpoints if c.max_ts_before < target]
    assert found == (slow[-1] if slow else None)  # the bisection equals a linear scan


@settings(max_examples=100, deadline=None)
@given(log=pulsar_logs(), cap=st.integers(4, 12), data=st.data())
def test_thinning_bounds_memory_and_keeps_floors_true(
    log: list[Message], cap: int, data: st.DataObject
) -> None:
    truth = from_scratch(log)
    index = OffsetIndex(1, max_checkpoints=cap)
    for i, message in enumerate(log):
        index.record(_item(truth[i], message))
    assert len(index.checkpoints) <= cap
    if log:
        by_position = {pos: truth[i] for i, (pos, _, _) in enumerate(log)}
        target = data.draw(st.integers(0, index.high_watermark))
        found = index.floor(target)
        assert found is not None and found.offset <= target
        assert by_position[found.position] == found.offset
        assert index.checkpoints[0].offset == 0  # the log start stays known


def test_trim_prunes_below_the_new_start_and_keeps_one_there() -> None:
    index = OffsetIndex(2)
    log = [(Position(1, e, -1), 1, 0) for e in range(4)] + [
        (Position(2, e, -1), 1, 0) for e in range(4)
    ]
    for i, m in enumerate(log):
        index.record(_item(i, m))
    index.take_changes()
    index.trim_to(4, Position(2, 0, -1))
    assert index.log_start == 4
    assert all(c.offset >= 4 for c in index.checkpoints)
    _created, dropped = index.take_changes()
    assert {c.offset for c in dropped} == {0, 2}
    assert index.floor(5) is not None and index.floor(5).offset == 4  # type: ignore[union-attr]


def test_checkpoint_disagreeing_with_the_count_is_healed_not_trusted() -> None:
    index = OffsetIndex(10, [Checkpoint(0, Position(1, 0, -1)), Checkpoint(5, Position(1, 3, -1))])
    index.high_watermark = 0
    index.record(_item(0, (Position(1, 0, -1), 2, 0)))
    index.record(_item(2, (Position(1, 1, -1), 2, 0)))
    index.record(_item(4, (Position(1, 2, -1), 2, 0)))
    # The count says the entry at (1, 3) holds offset 6; the stored checkpoint said 5.
    index.record(_item(6, (Position(1, 3, -1), 2, 0)))
    assert index.conflicts == 1
    assert [c.offset for c in index.checkpoints if c.position.entry == 3] == []
    assert 5 in {c.offset for c in index.take_changes()[1]}


def test_a_counter_refuses_to_start_anywhere_but_its_anchor() -> None:
    from kop.storage.types import StoredEntry, StoredMessage

    def msg(entry: int) -> StoredEntry:
        at = Position(3, entry, -1)
        return StoredEntry(at, "p", entry, 1, 1, StoredMessage(at, b"v", False, {}, "", 0, 1))

    counter = LogCounter(Anchor(Position(3, 2, -1), 7))
    with pytest.raises(TrimDetected):
        counter.feed(msg(5))
    counter = LogCounter(Anchor(Position(3, 2, -1), 7))
    item = counter.feed(msg(2))
    assert item is not None and item.base_offset == 7
    assert counter.feed(msg(2)) is None  # re-delivered: counted once
    after = LogCounter(Anchor(Position(3, 2, -1), 8, inclusive=False))
    assert after.feed(msg(2)) is None
    item = after.feed(msg(3))
    assert item is not None and item.base_offset == 8


def test_checkpoints_inside_a_batch_entry_from_older_kop_are_forgotten() -> None:
    """Older kop counted message by message; counting is by entry now, so a
    checkpoint at a message inside an entry cannot anchor a read."""
    inside = Checkpoint(3, Position(1, 0, 3))
    first = Checkpoint(0, Position(1, 0, 0))
    index = OffsetIndex(10, [first, inside], Mark(Position(1, 1, 4), 9))
    assert index.checkpoints == [Checkpoint(0, Position(1, 0, -1))]
    assert index.mark == Mark(Position(1, 1, -1), 9)
    assert index.take_changes()[1] == [inside]
