"""A subscription's cursor as Pulsar's internal stats show it (kop/pulsar/admin_partitions.py),
read into the storage port's `Cursor`: what a share group's start offset and lag are
counted from (D30)."""

from __future__ import annotations

import pytest

from kop.pulsar.admin_partitions import parse_cursor
from kop.storage.types import Cursor


def test_the_mark_delete_position_and_the_ranges_acknowledged_beyond_it() -> None:
    cursor = parse_cursor("154:2", "[(154:4..154:9], (155:-1..155:3]]")
    assert cursor == Cursor((154, 2), (((154, 4), (154, 9)), ((155, -1), (155, 3))))
    assert [k for k in [(154, 2), (154, 3), (154, 4), (154, 5), (155, 0), (155, 4)]
            if cursor.acked(k)] == [(154, 2), (154, 5), (155, 0)]  # fmt: skip


def test_a_fresh_subscription_has_acknowledged_nothing() -> None:
    cursor = parse_cursor("154:-1", "[]")
    assert cursor == Cursor((154, -1), ())
    assert not cursor.acked((154, 0))


@pytest.mark.parametrize("mark", ["", "154", "a:b", "154:2:3"])
def test_a_position_pulsar_never_writes_is_refused(mark: str) -> None:
    with pytest.raises(ValueError):
        parse_cursor(mark, "[]")
