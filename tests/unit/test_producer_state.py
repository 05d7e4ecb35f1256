"""Idempotent producers: retries are answered, partly stored batches completed,
gaps and fenced epochs refused. Kafka's rules, checked against a model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kop.log.producer_state import Duplicate, InFlight, ProducerStates, Write
from kop.protocol.errors import ErrorCode, KafkaError


def test_retry_of_a_stored_batch_is_a_duplicate_with_its_offset() -> None:
    s: ProducerStates[str] = ProducerStates()
    assert s.check(1, 0, 0, 5) == Write(0)
    s.begin(1, 0, 0, 5, "w1")
    assert s.check(1, 0, 0, 5) == InFlight("w1")
    for i in range(5):
        s.observe(1, 0, 0, 5, i, 100 + i)
    assert s.check(1, 0, 0, 5) == Duplicate(100)
    assert s.check(1, 0, 5, 3) == Write(0)


def test_a_partly_stored_batch_is_completed_from_its_first_missing_record() -> None:
    s: ProducerStates[str] = ProducerStates()
    s.begin(1, 0, 0, 3, "w1")
    s.observe(1, 0, 0, 3, 0, 40)
    s.failed(1, 0, 0, 3, "w1")
    assert s.check(1, 0, 0, 3) == Write(1)
    with pytest.raises(KafkaError) as info:  # the client must retry it before moving on
        s.check(1, 0, 3, 2)
    assert info.value.code == ErrorCode.out_of_order_sequence_number
    s.begin(1, 0, 0, 3, "w2")
    s.observe(1, 0, 0, 3, 1, 41)
    s.observe(1, 0, 0, 3, 2, 42)
    assert s.check(1, 0, 0, 3) == Duplicate(40)


def test_only_five_batches_are_remembered() -> None:
    s: ProducerStates[str] = ProducerStates()
    for i in range(7):
        s.observe(1, 0, i, 1, 0, i)
    assert s.check(1, 0, 2, 1) == Duplicate(2)
    with pytest.raises(KafkaError):
        s.check(1, 0, 0, 1)


def test_a_retry_older_than_the_remembered_batches_is_a_duplicate_not_out_of_order() -> None:
    """Found on the cluster tier (a broker killed under an idempotent producer): a retry
    of sequence 0 reached kop once 0-4 were stored and it no longer remembered batch 0.
    Answered OUT_OF_ORDER_SEQUENCE_NUMBER, the Java client bumped its epoch and sent the
    record again: stored twice. In one epoch every sequence below the expected one is
    stored, so Kafka's DUPLICATE_SEQUENCE_NUMBER (clients take it as success) is the
    answer; a gap ahead stays out of order, and so does any sequence while a failed
    batch waits for its retry."""
    s: ProducerStates[str] = ProducerStates()
    for i in range(7):
        s.observe(1, 0, i, 1, 0, i)
    with pytest.raises(KafkaError) as info:
        s.check(1, 0, 0, 1)
    assert info.value.code == ErrorCode.duplicate_sequence_number
    with pytest.raises(KafkaError) as info:
        s.check(1, 0, 9, 1)  # ahead: a gap
    assert info.value.code == ErrorCode.out_of_order_sequence_number
    s.begin(1, 0, 7, 2, "w")
    s.failed(1, 0, 7, 2, "w")
    with pytest.raises(KafkaError) as info:
        s.check(1, 0, 0, 1)
    assert info.value.code == ErrorCode.out_of_order_sequence_number


def test_a_batch_refused_before_it_was_sent_holds_back_the_later_ones() -> None:
    """Found on the cluster tier (a broker killed under an idempotent producer): the first
    batch of a producer on a partition (sequences 0-4) found no writer and failed before
    it was sent; the next one (5-9), sent behind it, got a writer and was stored; the
    retry of 0-4 was then judged a duplicate of a stored batch: acknowledged with offset
    -1 and never stored. Remembered as failed, the later batch waits for its retry."""
    s: ProducerStates[str] = ProducerStates()
    assert s.check(1, 0, 0, 5) == Write(0)
    s.refused(1, 0, 0, 5)
    with pytest.raises(KafkaError) as info:
        s.check(1, 0, 5, 5)
    assert info.value.code == ErrorCode.out_of_order_sequence_number
    assert s.check(1, 0, 0, 5) == Write(0)  # the retry is written
    s.begin(1, 0, 0, 5, "w")
    for i in range(5):
        s.observe(1, 0, 0, 5, i, i)
    assert s.check(1, 0, 5, 5) == Write(0)


def test_a_retry_below_the_first_sequence_seen_is_out_of_order_not_a_duplicate() -> None:
    """A producer first seen mid-sequence (its earlier batches failed where kop did not
    remember them, or went to a state since lost): whether a retry below that sequence
    was stored is unknown, and a duplicate answer would lose it if it was not. Kafka
    answers a sequence it has no record of out of order."""
    s: ProducerStates[str] = ProducerStates()
    for i in range(5, 12):
        s.observe(1, 0, i, 1, 0, i - 5)
    assert s.check(1, 0, 7, 1) == Duplicate(2)
    with pytest.raises(KafkaError) as info:
        s.check(1, 0, 6, 1)  # stored, but no longer remembered: at or after the floor
    assert info.value.code == ErrorCode.duplicate_sequence_number
    with pytest.raises(KafkaError) as info:
        s.check(1, 0, 0, 5)  # below the floor: never seen here
    assert info.value.code == ErrorCode.out_of_order_sequence_number
    restored: ProducerStates[str] = ProducerStates()
    restored.restore({1: s.take_changes()[1]})  # the floor survives a restart
    with pytest.raises(KafkaError) as info:
        restored.check(1, 0, 0, 5)
    assert info.value.code == ErrorCode.out_of_order_sequence_number


def test_gap_is_out_of_order() -> None:
    s: ProducerStates[str] = ProducerStates()
    s.observe(1, 0, 0, 5, 4, 4)
    with pytest.raises(KafkaError) as info:
        s.check(1, 0, 7, 3)
    assert info.value.code == ErrorCode.out_of_order_sequence_number


def test_old_epoch_is_fenced_new_epoch_restarts_at_zero() -> None:
    s: ProducerStates[str] = ProducerStates()
    s.observe(1, 2, 0, 1, 0, 0)
    with pytest.raises(KafkaError) as info:
        s.check(1, 1, 1, 1)
    assert info.value.code == ErrorCode.invalid_producer_epoch
    with pytest.raises(KafkaError) as info:
        s.check(1, 3, 5, 1)
    assert info.value.code == ErrorCode.out_of_order_sequence_number
    assert s.check(1, 3, 0, 1) == Write(0)


def test_sequence_numbers_wrap() -> None:
    s: ProducerStates[str] = ProducerStates()
    top = (1 << 31) - 2
    s.observe(1, 0, top, 2, 1, 10)
    assert s.check(1, 0, 0, 3) == Write(0)


def test_least_recently_used_producers_are_forgotten_beyond_the_limit() -> None:
    s: ProducerStates[str] = ProducerStates(max_producers=3)
    for pid in range(5):
        s.observe(pid, 0, 0, 1, 0, pid)
    assert len(s) == 3
    assert s.check(4, 0, 0, 1) == Duplicate(4)
    assert s.check(0, 0, 0, 1) == Write(0)  # forgotten: a fresh producer to kop


# -- the model -------------------------------------------------------------------------
# A client sends batches in sequence order and retries a batch until it is stored;
# Pulsar stores a prefix of each attempt (all, some or none). Whatever happens, the
# decisions must make the log hold every record of every batch exactly once.

attempts = st.lists(st.integers(0, 4), min_size=1, max_size=4)  # records stored per try


@settings(max_examples=300, deadline=None)
@given(batches=st.lists(st.tuples(st.integers(1, 4), attempts), min_size=1, max_size=8))
def test_retries_store_every_record_exactly_once(
    batches: list[tuple[int, list[int]]],
) -> None:
    s: ProducerStates[int] = ProducerStates()
    log: list[tuple[int, int]] = []  # (sequence of the record) in offset order
    seq = 0
    handle = 0
    for count, tries in batches:
        stored_before: int | None = None
        for stored_now in [*tries, count]:  # the client keeps retrying; the last try succeeds
            decision = s.check(7, 0, seq, count)
            if isinstance(decision, Duplicate):
                assert stored_before == count
                assert [r for _, r in log[decision.base_offset :][:count]] == list(
                    range(seq, seq + count)
                )
                break
            assert isinstance(decision, Write)
            k = decision.first_index
            assert k == (stored_before or 0)  # only what is missing is written again
            handle += 1
            s.begin(7, 0, seq, count, handle)
            persisted = min(stored_now, count - k)
            for i in range(k, k + persisted):
                log.append((handle, seq + i))
                s.observe(7, 0, seq, count, i, len(log) - 1)
            if k + persisted < count:
                s.failed(7, 0, seq, count, handle)
            stored_before = k + persisted
        seq += count
    assert [r for _, r in log] == list(range(seq))


def test_a_marker_of_a_later_epoch_fences_the_old_one_and_restarts_sequences() -> None:
    """The coordinator aborted a transaction and bumped the producer's epoch: the
    zombie's batches are refused at the partition, and the new epoch starts at 0."""
    s: ProducerStates[str] = ProducerStates()
    for i in range(3):
        s.observe(7, 2, 0, 3, i, 10 + i)
    s.marker(7, 3)
    with pytest.raises(KafkaError) as zombie:
        s.check(7, 2, 3, 1)
    assert zombie.value.code == ErrorCode.invalid_producer_epoch
    with pytest.raises(KafkaError) as gap:
        s.check(7, 3, 5, 1)
    assert gap.value.code == ErrorCode.out_of_order_sequence_number
    assert s.check(7, 3, 0, 1) == Write(0)


def test_a_new_epoch_begun_by_a_marker_starts_at_zero_after_a_restart() -> None:
    """The snapshot keeps that the fenced producer's next epoch begins at sequence 0;
    without it a restarted kop took that epoch's first batch at any sequence."""
    s: ProducerStates[str] = ProducerStates()
    s.observe(7, 2, 0, 3, 2, 12)
    s.marker(7, 3)
    restarted: ProducerStates[str] = ProducerStates()
    restarted.restore({pid: snap for pid, snap in s.take_changes().items() if snap})
    with pytest.raises(KafkaError) as gap:
        restarted.check(7, 3, 5, 1)
    assert gap.value.code == ErrorCode.out_of_order_sequence_number
    assert restarted.check(7, 3, 0, 1) == Write(0)


def test_a_marker_of_the_same_epoch_keeps_the_sequences() -> None:
    """A commit ends a transaction, not the producer's epoch: its next transaction
    continues the sequence, and a retry of a batch before the marker is still known."""
    s: ProducerStates[str] = ProducerStates()
    for i in range(3):
        s.observe(7, 2, 0, 3, i, 10 + i)
    s.marker(7, 2)
    assert s.check(7, 2, 0, 3) == Duplicate(10)
    assert s.check(7, 2, 3, 1) == Write(0)
    with pytest.raises(KafkaError):
        s.check(7, 2, 0, 1)


# A pipelining client: each round it sends every batch not yet acknowledged, in order,
# at most five, as the Java producer keeps five requests in flight. An attempt fails
# before it is sent (no writer: `refused`), or stores a prefix of what it writes. An
# acknowledgement (stored, or a duplicate answer) must mean every record is in the log
# once, in sequence order; out-of-order answers are retried in a later round.


@settings(max_examples=300, deadline=None)
@given(counts=st.lists(st.integers(1, 4), min_size=2, max_size=8), data=st.data())
def test_a_pipelining_client_never_has_a_record_acknowledged_but_not_stored(
    counts: list[int], data: st.DataObject
) -> None:
    s: ProducerStates[int] = ProducerStates()
    firsts = [sum(counts[:i]) for i in range(len(counts))]
    log: list[int] = []  # the sequence of each stored record, in offset order
    acked: set[int] = set()
    handle = 0
    for round_ in range(20):
        last = round_ >= 10  # from then on nothing fails: everything gets through
        for b in [b for b in range(len(counts)) if b not in acked][:5]:
            seq, count = firsts[b], counts[b]
            try:
                decision = s.check(7, 0, seq, count)
            except KafkaError as exc:
                if exc.code is ErrorCode.duplicate_sequence_number:
                    acked.add(b)
                continue
            if isinstance(decision, Duplicate):
                acked.add(b)
                continue
            assert isinstance(decision, Write)
            k = decision.first_index
            if not last and data.draw(st.booleans(), label="refused before sent"):
                s.refused(7, 0, seq, count)
                continue
            handle += 1
            s.begin(7, 0, seq, count, handle)
            stored = count - k if last else data.draw(st.integers(0, count - k), label="stored")
            for i in range(k, k + stored):
                log.append(seq + i)
                s.observe(7, 0, seq, count, i, len(log) - 1)
            if k + stored < count:
                s.failed(7, 0, seq, count, handle)
            else:
                acked.add(b)
        for b in acked:  # acknowledged: stored, every record of it
            assert set(range(firsts[b], firsts[b] + counts[b])) <= set(log), (b, log)
    assert log == list(range(sum(counts)))
