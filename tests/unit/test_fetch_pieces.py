"""A fetch serves the batches of several entries unjoined: what `read_committed`
leaves of them (below the last stable offset) is what it left of them joined."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kop.api.fetch import _below
from kop.protocol.records import Record, below, build_batch


def _entry(first: int, count: int) -> bytes:
    """One entry: a batch per record, back to back."""
    return b"".join(build_batch([Record(o, 0, b"k", b"v")]) for o in range(first, first + count))


@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=5), end=st.integers(0, 22))
def test_below_the_last_stable_offset_piece_by_piece_is_below_it_joined(
    sizes: list[int], end: int
) -> None:
    pieces, at = [], 0
    for n in sizes:
        pieces.append(_entry(at, n))
        at += n
    kept = _below(pieces, end)
    assert b"".join(kept) == below(b"".join(pieces), end)
    assert all(kept)  # no empty piece is sent
