"""The rules of client quotas without a server: which entity's quota applies to a
client (Kafka's precedence) and who shares it, what Kafka refuses to set, the rate
over Kafka's window and the throttle time that brings it back, and the bound on
what made-up client ids can make kop remember."""

from __future__ import annotations

import pytest

from kop.quotas.book import ANY, DEFAULT, EXACT, Component, Op, QuotaBook, _decode, _encode
from kop.quotas.entities import (
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    QuotaInvalid,
    applied,
    check_value,
    entity,
)
from kop.quotas.rate import Rate
from kop.quotas.throttles import Throttles
from tests.sim.memory_admin import MemoryRecords

U, C = "user", "client-id"
LEVELS = [  # Kafka's precedence, most specific first (docs: "Quotas")
    [(U, "alice"), (C, "app")],
    [(U, "alice"), (C, None)],
    [(U, "alice")],
    [(U, None), (C, "app")],
    [(U, None), (C, None)],
    [(U, None)],
    [(C, "app")],
    [(C, None)],
]
BUCKETS = [("alice", "app"), ("alice", "app"), ("alice", ""), ("alice", "app"),
           ("alice", "app"), ("alice", ""), ("", "app"), ("", "app")]  # fmt: skip


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_the_most_specific_quota_applies_and_names_who_shares_it(level: int) -> None:
    quotas = {entity(pairs): {PRODUCER_BYTE_RATE: float(i + 1)}
              for i, pairs in enumerate(LEVELS) if i >= level}  # fmt: skip
    got = applied(quotas, "alice", "app", PRODUCER_BYTE_RATE)
    assert got is not None and got.bound == level + 1 and got.bucket == BUCKETS[level]
    assert applied(quotas, "alice", "app", REQUEST_PERCENTAGE) is None  # another key


def test_what_kafka_refuses_to_set_is_refused() -> None:
    for pairs in ([], [(U, "a"), (U, "b")], [("ip", "10.0.0.1")], [("group", "g")],
                  [(U, "x" * 256)], [(U, "")]):  # fmt: skip
        with pytest.raises(QuotaInvalid):
            entity(pairs)
    refused = [("made_up", 1.0), (PRODUCER_BYTE_RATE, 0.0), (PRODUCER_BYTE_RATE, 1.5),
               (REQUEST_PERCENTAGE, float("nan")), ("controller_mutation_rate", 1.0)]  # fmt: skip
    for key, value in refused:
        with pytest.raises(QuotaInvalid):
            check_value(key, value)
    assert check_value(REQUEST_PERCENTAGE, 0.5) == 0.5


def test_a_rate_is_averaged_over_the_window_and_throttles_back_to_its_bound() -> None:
    rate = Rate()  # 11 samples of 1 s
    rate.record(100_000, now=0.0)
    # a first burst counts over 10 s (all samples but one): 10 KB/s
    assert rate.measure(0.0) == pytest.approx(10_000)
    assert rate.throttle_s(20_000, 0.0) == 0.0
    rate.record(200_000, now=0.5)
    # 30 KB/s against 20 KB/s: wait half the window again, so the average comes back
    assert rate.throttle_s(20_000, 0.5) == pytest.approx((30_000 - 20_000) / 20_000 * 10)
    rate.record(10**9, now=1.0)
    assert rate.throttle_s(1.0, 1.0) == 11.0  # never longer than the whole window
    assert rate.measure(30.0) == 0.0  # the samples aged out


def test_made_up_client_ids_share_one_rate_past_the_bound() -> None:
    clock = [0.0]
    throttles = Throttles(max_buckets=10, clock=lambda: clock[0])
    throttles.quotas = {entity([(C, None)]): {PRODUCER_BYTE_RATE: 1_000.0}}
    for n in range(100):
        throttles.charge(PRODUCER_BYTE_RATE, "mallory", f"id-{n}", 200)
    assert len(throttles) == 11  # ten of their own, and the one the rest share
    # the shared rate throttles the overflow together
    assert throttles.charge(PRODUCER_BYTE_RATE, "mallory", "id-new", 100) > 0
    clock[0] = 60.0  # all idle past the window: forgotten as new ones come
    throttles.charge(PRODUCER_BYTE_RATE, "mallory", "fresh", 100)
    assert len(throttles) == 1


async def test_quotas_are_kept_per_entity_and_read_back() -> None:
    store = MemoryRecords[str]()
    book = QuotaBook(store, Throttles())
    await book.alter([(U, "a,b=c"), (C, None)], [Op(REQUEST_PERCENTAGE, 25, False)], False)
    await book.alter([(U, None)], [Op(PRODUCER_BYTE_RATE, 1024, False)], False)
    with pytest.raises(QuotaInvalid):  # one key twice in one entry
        await book.alter([(U, None)], [Op(PRODUCER_BYTE_RATE, 1, False)] * 2, False)
    again = QuotaBook(store, Throttles())
    await again.refresh()
    assert again.describe([], strict=False) == book.describe([], strict=False)
    named = again.describe([Component(U, ANY, None)], strict=False)
    assert named == [(entity([(U, "a,b=c"), (C, None)]), {REQUEST_PERCENTAGE: 25.0})]
    assert again.describe([Component(U, ANY, None)], strict=True) == []
    assert again.describe([Component(U, DEFAULT, None)], strict=True) == [
        (entity([(U, None)]), {PRODUCER_BYTE_RATE: 1024.0})
    ]
    assert again.describe([Component(U, EXACT, "nobody")], strict=False) == []
    e = entity([(U, "<default>")])  # a user so named is not the default
    assert _decode(_encode(e), "{}") == (e, {})
    await book.alter([(U, None)], [Op(PRODUCER_BYTE_RATE, 0, True)], False)
    assert sorted(store.records) == ["client-id=<default>,user=a%2Cb%3Dc"]
