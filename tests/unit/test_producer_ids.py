"""Producer ids handed out by several kop instances never collide: the node id is
part of every id, and a burst within one millisecond neither repeats an id nor
spills into another node's."""

from __future__ import annotations

import pytest

from kop.api.context import ProducerIds


def test_bursts_on_several_nodes_never_collide() -> None:
    frozen = 1_790_000_000.000  # every id asked for in the same millisecond
    seen: set[int] = set()
    for node in (0, 1, 255):
        ids = ProducerIds(node, clock=lambda: frozen)
        burst = [ids.next() for _ in range(10_000)]
        assert burst == sorted(burst) and len(set(burst)) == len(burst)
        assert all((pid >> 12) & 0xFF == node for pid in burst)
        assert not seen & set(burst)
        seen |= set(burst)


def test_ids_grow_across_a_clock_that_steps_back_and_fit_in_an_int64() -> None:
    times = iter([1_790_000_000.5, 1_790_000_000.1, 1_790_000_001.0])
    ids = ProducerIds(3, clock=lambda: next(times))
    got = [ids.next() for _ in range(3)]
    assert got == sorted(got) and len(set(got)) == 3
    far = ProducerIds(255, clock=lambda: 7_258_118_400.0)  # the year 2200
    assert far.next() < 2**63


def test_a_node_id_outside_eight_bits_is_refused() -> None:
    with pytest.raises(ValueError):
        ProducerIds(256)
