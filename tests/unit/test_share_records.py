"""The held records of one share-partition (kop/groups/share/records.py): Kafka's
acknowledgement rules and what each outcome tells Pulsar."""

from __future__ import annotations

import pytest

from kop.groups.share.records import (
    AckBatch,
    AckType,
    Acquired,
    RecordState,
    ShareLimits,
    ShareRecords,
)
from kop.protocol.errors import ErrorCode, KafkaError

LIMITS = ShareLimits(lock_ms=1_000, delivery_limit=2, max_locks=100)


def _records() -> ShareRecords[str]:
    r: ShareRecords[str] = ShareRecords(LIMITS)
    r.offer("e0", 0, 3, 0)  # offsets 0-2, first delivery
    r.offer("e3", 3, 1, 1)  # offset 3, delivered once before
    return r


def test_acquisition_takes_whole_entries_and_counts_deliveries() -> None:
    r = _records()
    assert r.acquire("a", 1, now_ms=0) == [Acquired(0, 2, 1, 0)]
    assert r.acquire("b", 5, now_ms=0) == [Acquired(3, 3, 2, 3)]
    assert r.acquire("b", 5, now_ms=0) == []
    assert r.acquired == 4


def test_an_entry_is_acknowledged_once_every_record_is_resolved() -> None:
    r = _records()
    r.acquire("a", 10, now_ms=0)
    types = (AckType.ACCEPT, AckType.REJECT, AckType.ACCEPT)
    assert not r.acknowledge("a", [AckBatch(0, 1, types[:2])], now_ms=1)
    done = r.acknowledge("a", [AckBatch(2, 2, (AckType.ACCEPT,))], now_ms=1)
    assert done.ack == ["e0"] and done.release == []


def test_an_entry_released_whole_goes_back_to_pulsar() -> None:
    r = _records()
    r.acquire("a", 10, now_ms=0)
    done = r.acknowledge("a", [AckBatch(0, 2, (AckType.RELEASE,))], now_ms=1)
    assert done.release == ["e0"] and done.ack == []


def test_released_records_of_a_partly_resolved_entry_stay_with_kop() -> None:
    r = _records()
    r.acquire("a", 10, now_ms=0)
    types = (AckType.ACCEPT, AckType.RELEASE, AckType.RELEASE)
    assert not r.acknowledge("a", [AckBatch(0, 2, types)], now_ms=1)
    assert r.acquire("b", 10, now_ms=2) == [Acquired(1, 2, 2, 0)]


def test_a_record_past_its_delivery_limit_is_archived() -> None:
    r = _records()
    r.acquire("a", 10, now_ms=0)  # offset 3 is on its second (last) delivery
    done = r.acknowledge("a", [AckBatch(3, 3, (AckType.RELEASE,))], now_ms=1)
    assert done.ack == ["e3"]  # archived: the entry is done with


def test_expired_locks_are_released_and_renew_extends_one() -> None:
    r = _records()
    r.acquire("a", 10, now_ms=0)
    r.acknowledge("a", [AckBatch(0, 2, (AckType.RENEW,))], now_ms=900)
    assert r.expire(now_ms=1_000).ack == ["e3"]  # its last delivery lapsed: archived
    states = {o: s for o, s, _ in r.states()}
    assert states[0] is RecordState.ACQUIRED  # renewed until 1,900
    assert r.expire(now_ms=1_900).release == ["e0"]


def test_the_record_limit_mode_splits_an_entry() -> None:
    """KIP-1206: at most `cap` records, the rest of the entry left for another fetch."""
    r = _records()
    assert r.acquire("a", 1, now_ms=0, cap=2) == [Acquired(0, 1, 1, 0)]
    assert r.acquire("b", 1, now_ms=0, cap=5) == [Acquired(2, 2, 1, 0)]  # the entry ends
    assert r.acquired == 3


def test_a_renewal_the_group_does_not_allow_is_refused_whole() -> None:
    r = _records()
    r.acquire("a", 10, now_ms=0)
    batches = [AckBatch(0, 0, (AckType.ACCEPT,)), AckBatch(1, 1, (AckType.RENEW,))]
    with pytest.raises(KafkaError) as refused:
        r.acknowledge("a", batches, now_ms=1, renew=False)
    assert refused.value.code == ErrorCode.invalid_record_state
    assert "not enabled" in str(refused.value.message)
    assert {o: s for o, s, _ in r.states()}[0] is RecordState.ACQUIRED  # nothing applied


def test_a_member_leaving_releases_what_it_holds() -> None:
    r = _records()
    r.acquire("a", 1, now_ms=0)
    assert r.release_member("a").release == ["e0"]
    assert r.acquired == 0


@pytest.mark.parametrize(
    ("batch", "code"),
    [
        (AckBatch(2, 1, (1,)), ErrorCode.invalid_request),  # ends before it starts
        (AckBatch(0, 2, (1, 1)), ErrorCode.invalid_request),  # types do not match
        (AckBatch(0, 0, (9,)), ErrorCode.invalid_request),  # no such type
        (AckBatch(0, 2**62, (1,)), ErrorCode.invalid_record_state),  # far past what is held
        (AckBatch(7, 7, (1,)), ErrorCode.invalid_record_state),  # never delivered
    ],
)
def test_bad_acknowledgements_are_refused_whole(batch: AckBatch, code: ErrorCode) -> None:
    r = _records()
    r.acquire("a", 10, now_ms=0)
    before = r.states()
    with pytest.raises(KafkaError) as err:
        r.acknowledge("a", [AckBatch(0, 0, (1,)), batch], now_ms=1)
    assert err.value.code == code
    assert r.states() == before


def test_another_members_records_cannot_be_acknowledged() -> None:
    r = _records()
    r.acquire("a", 1, now_ms=0)
    with pytest.raises(KafkaError) as err:
        r.acknowledge("b", [AckBatch(0, 0, (AckType.ACCEPT,))], now_ms=1)
    assert err.value.code == ErrorCode.invalid_record_state


def test_a_reattached_consumer_forgets_what_pulsar_took_back() -> None:
    r = _records()
    r.acquire("a", 10, now_ms=0)
    r.drop(lambda token: token == "e3")
    assert [o for o, _, _ in r.states()] == [3]
    assert r.acquired == 1
