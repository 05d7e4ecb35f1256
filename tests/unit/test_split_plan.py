"""How the Pulsar view cuts a partition into tasks: the splits must cover every
message once, in order, and never cut inside an entry (a batch)."""

from __future__ import annotations

import itertools

from hypothesis import assume, given
from hypothesis import strategies as st

from spark_jobs.layout import Split, plan_splits

T = "persistent://public/default/t-partition-0"


def covering(splits: list[Split], position: tuple[int, int, int]) -> list[int]:
    """Indexes of the splits that would read the message at `position`."""
    out = []
    for s in splits:
        after_start = s.start is None or position >= s.start
        before_end = position <= s.end if s.last else position < s.end
        if after_start and before_end:
            out.append(s.index)
    return out


@st.composite
def partitions(draw: st.DrawFn) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    """Ledgers (id, entries) and every stored message, some entries being batches."""
    ids = sorted(draw(st.sets(st.integers(1, 10_000), min_size=1, max_size=6)))
    ledgers = [(i, draw(st.integers(0, 40))) for i in ids]
    messages = []
    for ledger, entries in ledgers:
        for entry in range(entries):
            batch = draw(st.integers(0, 3))
            messages += [(ledger, entry, -1)] if batch == 0 else [
                (ledger, entry, b) for b in range(batch)
            ]  # fmt: skip
    return ledgers, messages


Layout = tuple[list[tuple[int, int]], list[tuple[int, int, int]]]


@given(partitions(), st.integers(1, 50))
def test_splits_cover_every_message_once_in_order(layout: Layout, every: int) -> None:
    ledgers, messages = layout
    assume(messages)
    splits = plan_splits(T, 0, messages[-1], ledgers, every)
    assert [s.index for s in splits] == list(range(len(splits)))
    assert splits[0].start is None and splits[-1].last
    assert sum(s.last for s in splits) == 1
    for before, after in itertools.pairwise(splits):
        assert after.start == before.end  # contiguous: the end is exclusive
        assert after.start is not None and after.start[2] == -1  # an entry start
    owners = [covering(splits, m) for m in messages]
    assert all(len(o) == 1 for o in owners)
    assert [o[0] for o in owners] == sorted(o[0] for o in owners)


@given(partitions(), st.integers(1, 50))
def test_no_split_is_longer_than_asked(layout: Layout, every: int) -> None:
    ledgers, messages = layout
    assume(messages)
    for s in plan_splits(T, 0, messages[-1], ledgers, every):
        entries = {m[:2] for m in messages if covering([s], m)}
        assert 0 < len(entries) <= every
