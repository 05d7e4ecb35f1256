"""The per-group configs every instance applies (kop/groups/group_config_book.py): a
namespace's records read once per refresh bound, however many ask at once; at most 200
groups with overrides per namespace; Pulsar away or a record gone bad, the group keeps
working on what was known."""

from __future__ import annotations

import asyncio

import pytest

from kop.groups.consumer.coordinator import ConsumerSettings
from kop.groups.group_config_book import MAX_GROUPS_PER_NAMESPACE, GroupConfigBook
from kop.groups.group_configs import broker_wide
from kop.groups.scope import GroupScope
from kop.groups.share.coordinator import ShareSettings
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.naming import Namespace

DEFAULT = Namespace("public", "default")
ACME = Namespace("acme", "orders")
SET, DELETE = 0, 1


class Store:
    """Namespace properties, counting reads; `down` makes every call fail."""

    def __init__(self) -> None:
        self.records: dict[tuple[Namespace, str], str] = {}
        self.reads = 0
        self.down = False

    async def load(self, ns: Namespace) -> dict[str, str]:
        self.reads += 1
        await asyncio.sleep(0)
        if self.down:
            raise ConnectionError("Pulsar is away")
        return {g: r for (n, g), r in self.records.items() if n == ns}

    async def save(self, ns: Namespace, group: str, record: str) -> None:
        self.records[(ns, group)] = record

    async def delete(self, ns: Namespace, group: str) -> None:
        self.records.pop((ns, group), None)


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def book(store: Store, clock: Clock) -> GroupConfigBook:
    defaults = broker_wide(ConsumerSettings(), ShareSettings())
    return GroupConfigBook(store, defaults, GroupScope(DEFAULT), refresh_s=5.0, clock=clock)


async def test_a_namespace_is_read_once_per_refresh_bound_however_many_ask() -> None:
    store, clock = Store(), Clock()
    configs = book(store, clock)
    store.records[(ACME, "g")] = '{"share.auto.offset.reset": "earliest"}'
    got = await asyncio.gather(*(configs.fresh("//acme/orders/g") for _ in range(50)))
    assert store.reads == 1 and all(s.share_earliest for s in got)
    assert configs.settings("//acme/orders/other").share_earliest is False
    assert configs.settings("g").share_earliest is False  # the default namespace's own `g`
    store.records[(ACME, "g")] = '{"consumer.session.timeout.ms": "50000"}'
    clock.now = 4.9
    assert (await configs.fresh("//acme/orders/g")).share_earliest  # still the copy
    clock.now = 5.0
    fresh = await configs.fresh("//acme/orders/g")
    assert (fresh.share_earliest, fresh.consumer_session_ms, store.reads) == (False, 50_000, 2)


async def test_pulsar_away_or_a_bad_record_leaves_what_was_known() -> None:
    store, clock = Store(), Clock()
    configs = book(store, clock)
    store.records[(ACME, "g")] = '{"share.delivery.count.limit": "3"}'
    store.records[(ACME, "bad")] = '{"share.delivery.count.limit": "300"}'  # out of bounds
    store.records[(ACME, "worse")] = "not json"
    assert (await configs.fresh("//acme/orders/g")).share_delivery_limit == 3
    assert (await configs.fresh("//acme/orders/bad")).share_delivery_limit == 5
    assert (await configs.fresh("//acme/orders/worse")).share_delivery_limit == 5
    store.down, clock.now = True, 60.0
    reads = store.reads
    assert (await configs.fresh("//acme/orders/g")).share_delivery_limit == 3
    for _ in range(10):  # heartbeats meanwhile do not ask Pulsar again within the bound
        assert (await configs.fresh("//acme/orders/g")).share_delivery_limit == 3
    assert store.reads == reads + 1
    with pytest.raises(ConnectionError):  # an alter needs Pulsar: it is refused, not lost
        await configs.alter(ACME, "g", [("share.delivery.count.limit", SET, "4")], False)


async def test_a_namespace_holds_overrides_for_at_most_200_groups() -> None:
    store, clock = Store(), Clock()
    configs = book(store, clock)
    one = [("share.heartbeat.interval.ms", SET, "6000")]
    for i in range(MAX_GROUPS_PER_NAMESPACE):
        await configs.alter(ACME, f"g{i}", one, False)
    with pytest.raises(KafkaError) as full:
        await configs.alter(ACME, "one-more", one, False)
    assert full.value.code is ErrorCode.invalid_config
    await configs.alter(ACME, "g0", [("share.session.timeout.ms", SET, "50000")], False)
    await configs.alter(DEFAULT, "one-more", one, False)  # another namespace: its own room
    await configs.alter(ACME, "g1", [("share.heartbeat.interval.ms", DELETE, None)], False)
    await configs.alter(ACME, "one-more", one, False)  # g1 has none left: room for one
    assert (ACME, "g1") not in store.records
    assert len([k for k in store.records if k[0] == ACME]) == MAX_GROUPS_PER_NAMESPACE
