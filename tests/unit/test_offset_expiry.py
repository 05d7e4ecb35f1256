"""Which committed offsets expire (KIP-211, Kafka's offsets.retention.minutes)."""

from __future__ import annotations

from typing import cast

from kafka.coordinator.assignors.abstract import ConsumerProtocolSubscription

from kop.groups.coordinator import Coordinator
from kop.groups.group import Group, Member
from kop.groups.loading import load_groups
from kop.groups.offsets import CHECK_INTERVAL_MS, Offsets
from kop.groups.offsets_store import OffsetsStore
from kop.groups.types import CommittedOffset, GroupMetadata, GroupState, TopicPartition
from tests.sim.memory_log import MemoryLog

T, U = TopicPartition("t", 0), TopicPartition("u", 0)
RETENTION = 1_000


def _offsets(**commit_ms: int) -> Offsets:
    o = Offsets(cast(OffsetsStore, None), RETENTION)  # expiry decisions touch no storage
    o.restore(
        {
            "g": {
                TopicPartition(t, 0): CommittedOffset(5, commit_ms=ms)
                for t, ms in commit_ms.items()
            }
        }
    )
    return o


def _stable_consumer_group(subscribed: list[str]) -> Group:
    g = Group("g", protocol_type="consumer", protocol="range", generation=3)
    meta = ConsumerProtocolSubscription(0, subscribed, b"").encode()
    g.add(Member("m", None, "c", "h", 10_000, 10_000, "consumer", (("range", meta),)))
    g.state = GroupState.STABLE
    return g


def test_an_empty_groups_offsets_expire_a_retention_after_it_emptied() -> None:
    o = _offsets(t=0, u=5_000)
    g = Group("g", protocol_type="consumer", state_ms=2_000)
    assert o.expired("g", g, 2_999) == []
    assert sorted(o.expired("g", g, 3_000), key=str) == [T, U]  # even the newer commit


def test_a_standalone_groups_offsets_expire_by_commit_time() -> None:
    o = _offsets(t=0, u=5_000)
    assert o.expired("g", None, 1_000) == [T]
    assert sorted(o.expired("g", None, 6_000), key=str) == [T, U]


def test_a_live_group_keeps_what_it_subscribes_to_and_expires_the_rest() -> None:
    o = _offsets(t=0, u=0)
    g = _stable_consumer_group(["t"])
    assert o.expired("g", g, 10**9) == [U]
    g.state = GroupState.PREPARING_REBALANCE  # membership in flux: nothing expires
    assert o.expired("g", g, 10**9) == []


def test_an_explicit_expiry_time_wins() -> None:
    o = Offsets(cast(OffsetsStore, None), RETENTION)
    o.restore({"g": {T: CommittedOffset(5, commit_ms=0, expire_ms=50_000)}})
    assert o.expired("g", None, 49_999) == []
    assert o.expired("g", None, 50_000) == [T]


async def test_an_empty_group_without_offsets_is_removed_and_stays_gone() -> None:
    """Kafka's cleanup: a group that joined and left without committing holds a place
    among max_groups until then. A standalone group, known only by its offsets,
    is reloaded Empty and kept while it has them."""
    store = OffsetsStore(MemoryLog(), "persistent://public/__kop/consumer-offsets", 2)
    await load_groups(store, Coordinator(), Offsets(store, 10**12), 0)  # takes the partitions
    await store.store_group(GroupMetadata("gone", "consumer", 1, None, None, 0))
    await store.commit("solo", {T: CommittedOffset(5, commit_ms=0)})
    coordinator, offsets = Coordinator(), Offsets(store, 10**12)
    await load_groups(store, coordinator, offsets, 0)
    assert {g: coordinator.groups[g].state for g in ("gone", "solo")} == {
        "gone": GroupState.EMPTY, "solo": GroupState.EMPTY,
    }  # fmt: skip
    assert await offsets.expire(coordinator.groups, CHECK_INTERVAL_MS - 1) == []  # too soon
    assert await offsets.expire(coordinator.groups, 2 * CHECK_INTERVAL_MS) == ["gone"]
    again, again_offsets = Coordinator(), Offsets(store, 10**12)
    await load_groups(store, again, again_offsets, 0)
    assert set(again.groups) == {"solo"}
