"""Idempotent producers: retries are answered, gaps and fenced epochs refused."""

from __future__ import annotations

import pytest

from kop.log.producer_state import Duplicate, ProducerStates
from kop.protocol.errors import ErrorCode, KafkaError


def test_retry_of_a_recent_batch_is_a_duplicate_with_its_offset() -> None:
    s: ProducerStates[int] = ProducerStates()
    assert s.check(1, 0, 0, 4) is None
    s.record(1, 0, 0, 4, 100)
    assert s.check(1, 0, 5, 9) is None
    s.record(1, 0, 5, 9, 105)
    assert s.check(1, 0, 0, 4) == Duplicate(100)
    assert s.check(1, 0, 5, 9) == Duplicate(105)


def test_only_five_batches_are_remembered() -> None:
    s: ProducerStates[int] = ProducerStates()
    for i in range(7):
        s.record(1, 0, i, i, i)
    assert s.check(1, 0, 2, 2) == Duplicate(2)
    with pytest.raises(KafkaError):
        s.check(1, 0, 0, 0)


def test_gap_is_out_of_order() -> None:
    s: ProducerStates[int] = ProducerStates()
    s.record(1, 0, 0, 4, 0)
    with pytest.raises(KafkaError) as info:
        s.check(1, 0, 7, 9)
    assert info.value.code == ErrorCode.out_of_order_sequence_number


def test_old_epoch_is_fenced_new_epoch_restarts_at_zero() -> None:
    s: ProducerStates[int] = ProducerStates()
    s.record(1, 2, 0, 0, 0)
    with pytest.raises(KafkaError) as info:
        s.check(1, 1, 1, 1)
    assert info.value.code == ErrorCode.invalid_producer_epoch
    with pytest.raises(KafkaError):
        s.check(1, 3, 5, 5)
    assert s.check(1, 3, 0, 0) is None


def test_unknown_producer_starts_anywhere() -> None:
    s: ProducerStates[int] = ProducerStates()
    assert s.check(99, 0, 1234, 1240) is None


def test_failed_batch_is_forgotten_so_its_retry_is_in_order() -> None:
    s: ProducerStates[int] = ProducerStates()
    s.record(1, 0, 0, 4, 0)
    s.record(1, 0, 5, 9, -1)
    s.forget_from(1, 5)
    assert s.check(1, 0, 5, 9) is None


def test_sequence_wraps_around() -> None:
    s: ProducerStates[int] = ProducerStates()
    top = 2**31 - 1
    s.record(1, 0, top - 1, top, 0)
    assert s.check(1, 0, 0, 3) is None


def test_log_rebuild_replaces_pending_result() -> None:
    s: ProducerStates[object] = ProducerStates()
    handle = object()
    s.record(1, 0, 0, 2, handle)
    s.record(1, 0, 0, 2, 17)
    assert s.check(1, 0, 0, 2) == Duplicate(17)
