"""The fetch session cache (kop.api.fetch_sessions) on its own, with an injected clock
and id source: Kafka's slots and eviction (idle, then by size), epochs, forgotten
partitions, what an incremental answer names, and kop's own rules between tenants
(a session is its owner's alone, one principal holds only its share, ids are random
and not handed out again soon)."""

from __future__ import annotations

from collections.abc import Iterator

from kio.schema.fetch.v12.request import FetchPartition
from kio.schema.fetch.v12.response import PartitionData
from kio.static.primitive import i32, i64

from kop.api.fetch import _part
from kop.api.fetch_session import Key, next_epoch
from kop.api.fetch_sessions import NO_SESSION, FetchSessions, Full, Incremental, Owner, Refused
from kop.protocol.errors import ErrorCode

ALICE = Owner("PLAINTEXT", "User:alice", "acme/orders")
BOB = Owner("PLAINTEXT", "User:bob", "acme/orders")
EVICT_MS = 120_000


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def cache(slots: int = 10, per_principal: int = 10, max_partitions: int = 100) -> tuple[
    FetchSessions, Clock
]:  # fmt: skip
    clock = Clock()
    ids = iter(range(1, 1 << 20))
    return FetchSessions(
        slots, EVICT_MS, per_principal, max_partitions, clock, lambda: next(ids)
    ), clock


def asked(*partitions: int, offset: int = 0) -> list[tuple[Key, FetchPartition]]:
    at, limit = i64(offset), i32(1 << 20)
    return [
        (("t", p), FetchPartition(partition=i32(p), fetch_offset=at, partition_max_bytes=limit))
        for p in partitions
    ]


def told(p: int, hw: int = 5, records: bytes = b"", code: ErrorCode = ErrorCode.none,
         start: int = 0, stable: int | None = None) -> tuple[Key, PartitionData]:  # fmt: skip
    return ("t", p), _part(p, code, hw, hw if stable is None else stable, start, records)


def open_session(c: FetchSessions, owner: Owner, *partitions: int) -> int:
    plan = c.begin(owner, 0, 0, asked(*partitions), [])
    assert isinstance(plan, Full) and plan.open
    return c.open(owner, [(k, p, told(k[1])[1]) for k, p in plan.asked])


def incremental(c: FetchSessions, owner: Owner, sid: int, epoch: int, *named: int,
                forgotten: tuple[int, ...] = ()) -> Incremental:  # fmt: skip
    plan = c.begin(owner, sid, epoch, asked(*named, offset=3), [("t", p) for p in forgotten])
    assert isinstance(plan, Incremental), plan
    return plan


def test_a_full_fetch_opens_a_session_and_the_next_continues_it() -> None:
    c, _ = cache()
    sid = open_session(c, ALICE, 0, 1)
    assert sid != NO_SESSION and (c.sessions, c.partitions) == (1, 2)
    plan = incremental(c, ALICE, sid, 1, 1)
    assert [k for k, _ in plan.session.asked()] == [("t", 0), ("t", 1)]
    assert [p.fetch_offset for _, p in plan.session.asked()] == [0, 3]  # the new position
    assert c.begin(ALICE, sid, 1, [], []) == Refused(ErrorCode.invalid_fetch_session_epoch)
    assert isinstance(c.begin(ALICE, sid, 2, [], []), Incremental)


def test_final_epoch_closes_without_opening_and_an_unknown_id_is_not_found() -> None:
    c, _ = cache()
    sid = open_session(c, ALICE, 0)
    assert c.begin(ALICE, sid, -1, asked(0), []) == Full(asked(0), open=False)
    assert c.sessions == 0
    assert c.begin(ALICE, sid, 1, [], []) == Refused(ErrorCode.fetch_session_id_not_found)
    assert c.begin(ALICE, 12345, -2, [], []) == Refused(ErrorCode.fetch_session_id_not_found)


def test_epochs_wrap_to_one_and_final_stays_final() -> None:
    assert [next_epoch(e) for e in (0, 1, (1 << 31) - 1, -1, -5)] == [1, 2, 1, -1, -1]


def test_forgetting_every_partition_closes_the_session() -> None:
    c, _ = cache()
    sid = open_session(c, ALICE, 0, 1)
    plan = incremental(c, ALICE, sid, 1, forgotten=(0,))
    assert [k for k, _ in plan.session.asked()] == [("t", 1)] and c.partitions == 1
    assert c.begin(ALICE, sid, 2, [], [("t", 1)]) == Full([], open=False)
    assert (c.sessions, c.partitions) == (0, 0)


def test_an_incremental_answer_names_only_partitions_with_something_to_say() -> None:
    c, _ = cache()
    sid = open_session(c, ALICE, 0, 1, 2, 3, 4, 5)  # each told hw 5, start 0, stable 5
    plan = incremental(c, ALICE, sid, 1)
    parts = [
        told(0), told(1, records=b"x"), told(2, hw=6), told(3, start=1),
        told(4, stable=4), told(5, code=ErrorCode.not_leader_or_follower),
    ]  # fmt: skip
    error, kept = c.answer(plan, parts)
    assert error == ErrorCode.none and [k[1] for k, _ in kept] == [1, 2, 3, 4, 5]
    # partition 1 brought records: it goes to the end, so the others read first next time
    assert [k[1] for k, _ in plan.session.asked()] == [0, 2, 3, 4, 5, 1]
    plan = incremental(c, ALICE, sid, 2)
    # all as last told, but 5: its error made the cache forget its high watermark
    again = [told(0), told(2, hw=6), told(3, start=1), told(4, stable=4), told(5), told(1)]
    assert [k[1] for k, _ in c.answer(plan, again)[1]] == [5]


def test_a_later_request_of_the_session_makes_an_earlier_answer_stale() -> None:
    c, _ = cache()
    sid = open_session(c, ALICE, 0)
    first = incremental(c, ALICE, sid, 1)
    second = incremental(c, ALICE, sid, 2)
    assert c.answer(first, [told(0, records=b"x")]) == (ErrorCode.invalid_fetch_session_epoch, [])
    assert c.answer(second, [told(0, records=b"x")])[1] == [told(0, records=b"x")]


def test_a_full_cache_evicts_the_idle_session_first() -> None:
    c, clock = cache(slots=2)
    a, b = open_session(c, ALICE, 0, 1, 2), open_session(c, BOB, 0)
    assert open_session(c, BOB, 0) == NO_SESSION  # all busy, none older than 2 minutes
    clock.ms += EVICT_MS // 2
    incremental(c, BOB, b, 1)
    clock.ms += EVICT_MS // 2  # alice idle exactly the eviction time: not yet
    assert open_session(c, BOB, 5) == NO_SESSION
    clock.ms += 1  # alice idle just over the eviction time, bob not
    d = open_session(c, BOB, 5)
    assert d != NO_SESSION and c.evictions == 1
    assert c.get(ALICE, a) is None and c.get(BOB, b) is not None


def test_a_larger_session_evicts_the_smallest_old_one_but_not_an_equal_or_young_one() -> None:
    c, clock = cache(slots=2)
    small, big = open_session(c, ALICE, 0), open_session(c, BOB, 0, 1, 2)
    clock.ms += EVICT_MS + 1
    incremental(c, ALICE, small, 1)
    incremental(c, BOB, big, 1)  # both used just now, both older than eviction_ms
    assert open_session(c, BOB, 7) == NO_SESSION  # equal size does not evict
    newer = open_session(c, BOB, 7, 8)
    assert newer != NO_SESSION and c.get(ALICE, small) is None and c.evictions == 1
    # a larger one takes the slot of the old one left, never the young one's
    assert open_session(c, ALICE, *range(20)) != NO_SESSION and c.get(BOB, big) is None
    assert open_session(c, ALICE, *range(30)) == NO_SESSION and c.get(BOB, newer)


def test_evictability_is_as_of_last_use_as_in_kafka() -> None:
    c, clock = cache(slots=1)
    sid = open_session(c, ALICE, 0)
    clock.ms += EVICT_MS
    incremental(c, ALICE, sid, 1)  # exactly as old as the eviction time: not old enough
    assert open_session(c, BOB, 0, 1, 2) == NO_SESSION
    c, clock = cache(slots=1)
    sid = open_session(c, ALICE, 0)
    clock.ms += EVICT_MS - 10
    incremental(c, ALICE, sid, 1)  # used before it was old enough
    clock.ms += 20  # now old enough, but not touched since: not evictable by size
    assert open_session(c, BOB, 0, 1, 2) == NO_SESSION
    incremental(c, ALICE, sid, 2)
    assert open_session(c, BOB, 0, 1, 2) != NO_SESSION


def test_a_session_is_its_owners_alone() -> None:
    c, _ = cache()
    sid = open_session(c, ALICE, 0)
    others = [
        BOB,
        Owner("PLAINTEXT", "User:alice", "acme/other"),
        Owner("SASL_SSL", "User:alice", "acme/orders"),
    ]
    for other in others:
        assert c.begin(other, sid, 1, [], []) == Refused(ErrorCode.fetch_session_id_not_found)
        assert c.begin(other, sid, 0, asked(0), []) == Full(asked(0), open=True)  # not closed
    assert isinstance(c.begin(ALICE, sid, 1, [], []), Incremental)


def test_one_principal_holds_only_its_share_and_competes_only_with_itself() -> None:
    c, clock = cache(slots=4, per_principal=2)
    a1, a2 = open_session(c, ALICE, 0), open_session(c, ALICE, 1)
    assert open_session(c, ALICE, 2, 3, 4) == NO_SESSION  # at its share, nothing evictable
    b1, b2 = open_session(c, BOB, 0), open_session(c, BOB, 1)
    clock.ms += EVICT_MS + 1  # everyone idle now
    incremental(c, BOB, b1, 1)
    incremental(c, BOB, b2, 1)
    a3 = open_session(c, ALICE, 2, 3, 4)
    assert a3 != NO_SESSION and c.get(ALICE, a1) is None  # its own idle session, not bob's
    assert c.get(ALICE, a2) is not None and c.get(BOB, b1) and c.get(BOB, b2)


def test_ids_in_use_or_recently_retired_are_not_handed_out() -> None:
    ids: Iterator[int] = iter([7, 7, 9, 7, 9, 11])
    c = FetchSessions(10, EVICT_MS, 10, 100, Clock(), lambda: next(ids))
    first = open_session(c, ALICE, 0)
    second = open_session(c, ALICE, 1)
    assert (first, second) == (7, 9)
    c.begin(ALICE, first, -1, [], [])  # closed: 7 is retired
    assert open_session(c, ALICE, 2) == 11


def test_random_ids_are_positive_and_not_sequential() -> None:
    c = FetchSessions(100, EVICT_MS, 100, 100)
    ids = [open_session(c, ALICE, p) for p in range(50)]
    assert all(0 < i < 1 << 31 for i in ids) and len(set(ids)) == 50
    assert sorted(ids) != list(range(min(ids), min(ids) + 50))


def test_a_session_holds_no_more_partitions_than_a_fetch_may_name() -> None:
    c, _ = cache(max_partitions=3)
    assert open_session(c, ALICE, 0, 1, 2, 3) == NO_SESSION
    sid = open_session(c, ALICE, 0, 1)
    incremental(c, ALICE, sid, 1, 2)
    assert c.begin(ALICE, sid, 2, asked(3), []) == Refused(ErrorCode.fetch_session_id_not_found)
    assert (c.sessions, c.partitions) == (0, 0)
