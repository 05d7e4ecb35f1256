"""Reading the offset-index topic back: whatever a message there holds, loading goes
on (an unreadable message is logged and skipped), and what is read is in range."""

from __future__ import annotations

import json

import pytest

from kop.log.checkpoint_store import Persisted, _apply, _snapshot_body
from kop.log.producer_state import Snapshot
from kop.storage.types import Position, StoredMessage


def _msg(key: str, payload: bytes) -> StoredMessage:
    return StoredMessage(Position(1, 1), payload, not payload, {}, key, 0, 0)


def _load(*messages: StoredMessage) -> dict[str, Persisted]:
    found: dict[str, Persisted] = {}
    for m in messages:
        _apply(found, "index-0", m)
    return found


GOOD_MARK = json.dumps({"l": 3, "e": 4, "b": -1, "n": 50, "t": 9}).encode()


@pytest.mark.parametrize(
    ("key", "payload"),
    [
        ("t-0|mark", b"[" * 5000),  # json.loads: RecursionError
        ("t-0|mark", b'{"l": Infinity, "e": 1, "b": -1, "n": 5}'),  # int(inf): OverflowError
        ("t-0|floor", b'{"o": -Infinity}'),
        ("t-0|p7", b'{"e": 1, "b": [[1, 2, 3, NaN]]}'),
        ("t-0|mark", b'{"l": 1e400, "e": 1, "b": -1, "n": 5}'),
        ("t-0|mark", b'{"l": 99999999999999999999, "e": 1, "b": -1, "n": 5}'),  # past int64
        ("t-0|00000000000000000042", b'{"l": true, "e": 1, "b": -1, "t": 0}'),
        ("t-0|99999999999999999999999", b'{"l": 1, "e": 1, "b": -1, "t": 0}'),
        ("t-0|mark", b"\xff\xfe"),
        ("t-0|mark", b"[1, 2]"),
        ("t-0|txn", b'{"o": [], "a": []}'),
        ("t-0|txn", b'{"o": {"x": 1}, "a": []}'),
        ("t-0|txn", b'{"o": {}, "a": [[1, 2]]}'),
        ("t-0|txn", b'{"o": {}, "a": [[1, 2, 1e400]]}'),
    ],
    ids=[
        "deep-nesting", "infinity", "floor-infinity", "nan-in-producer", "1e400",
        "past-int64", "bool-ledger", "key-past-int64", "not-utf8", "not-an-object",
        "txn-open-not-an-object", "txn-pid-not-a-number", "txn-aborted-short",
        "txn-aborted-1e400",
    ],
)  # fmt: skip
def test_an_unreadable_index_message_is_skipped_and_loading_goes_on(
    key: str, payload: bytes
) -> None:
    found = _load(_msg("t-0|mark", GOOD_MARK), _msg(key, payload))
    state = found["t-0"]
    assert state.mark is not None and state.mark.next_offset == 50
    assert state.checkpoints == {} and state.producers == {} and state.floor == 0
    assert state.txns == ({}, [])


@pytest.mark.parametrize("starts_at_zero", [True, False])
@pytest.mark.parametrize("coordinator_epoch", [-1, 0, 7])
def test_a_producer_snapshot_reads_back_as_written(
    starts_at_zero: bool, coordinator_epoch: int
) -> None:
    """The last marker's coordinator epoch too (issue 33): a restarted partition still
    refuses a stale coordinator's marker."""
    snap = Snapshot(3, [(0, 5, 40, 5)], starts_at_zero, coordinator_epoch)
    found = _load(_msg("t-0|p7", _snapshot_body(snap)))
    assert found["t-0"].producers == {7: snap}


def test_a_producer_snapshot_written_before_starts_at_zero_reads_as_not() -> None:
    found = _load(_msg("t-0|p7", b'{"e": 3, "b": [[0, 5, 40, 5]]}'))
    assert found["t-0"].producers == {7: Snapshot(3, [(0, 5, 40, 5)], False)}
