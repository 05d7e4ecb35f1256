"""Idempotent producers are capped per tenant across its partitions (issue 33): a tenant
writing one batch under each of many made-up producer ids to each of its partitions
held partitions x `max_producers` states in the memory every tenant shares. Now past
`max_producers_per_tenant` the tenant's least recently used producer is forgotten,
wherever it is, and another tenant's producers are never touched."""

from __future__ import annotations

from kop.log.producer_state import Duplicate, ProducerStates, Write
from kop.log.tenant_producers import TenantProducers, tenant_of


def _stored(states: ProducerStates[object], pid: int, offset: int) -> None:
    """One batch of one record at sequence 0, written and seen in the log."""
    assert isinstance(states.check(pid, 0, 0, 1), Write)
    states.begin(pid, 0, 0, 1, object())
    states.observe(pid, 0, 0, 1, 0, offset)


def test_a_tenant_past_its_share_forgets_its_own_oldest_producer_on_any_partition() -> None:
    share = TenantProducers(max_per_tenant=3)
    b1, b2 = ProducerStates[object](10, share, "b"), ProducerStates[object](10, share, "b")
    a1 = ProducerStates[object](10, share, "a")
    _stored(a1, 100, 0)  # tenant a's producer, before the flood
    _stored(b1, 1, 0)
    _stored(b2, 2, 0)
    _stored(b1, 3, 1)
    assert share.held("b") == 3
    _stored(b2, 4, 1)  # the fourth of b's: b's least recently used (1, on b1) goes
    assert share.held("b") == 3
    assert b1.epoch(1) is None and b1.epoch(3) == 0 and b2.epoch(2) == 0
    assert b1.take_changes()[1] is None  # forgotten in the persisted state too
    for pid in range(1000, 1100):  # the flood: a's producer stays known
        _stored(b2, pid, pid)
    assert isinstance(a1.check(100, 0, 0, 1), Duplicate)
    assert share.held("a") == 1 and share.held("b") == 3


def test_using_a_producer_keeps_it_and_a_closed_partition_gives_its_share_back() -> None:
    share = TenantProducers(max_per_tenant=2)
    b1, b2 = ProducerStates[object](10, share, "b"), ProducerStates[object](10, share, "b")
    _stored(b1, 1, 0)
    _stored(b1, 2, 1)
    assert isinstance(b1.check(1, 0, 0, 1), Duplicate)  # 1 used again: 2 is the oldest
    _stored(b2, 3, 0)
    assert b1.epoch(1) == 0 and b1.epoch(2) is None
    b1.close()
    assert share.held("b") == 1
    _stored(b2, 4, 1)
    assert b2.epoch(3) == 0 and b2.epoch(4) == 0


def test_a_partitions_own_limit_gives_its_share_back_too() -> None:
    share = TenantProducers(max_per_tenant=100)
    states = ProducerStates[object](2, share, "b")
    for pid in range(5):
        _stored(states, pid, pid)
    assert share.held("b") == 2 == len(states)


def test_the_tenant_of_a_topic() -> None:
    assert tenant_of("persistent://acme/apps/orders-partition-3") == "acme"
