"""max_groups seen from the service: a refused new group is logged for the operator
(the client only learns COORDINATOR_NOT_AVAILABLE), once a minute at most."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kop.groups.coordinator import Limits
from kop.groups.offsets_store import OffsetsStore
from kop.groups.service import GroupService
from kop.groups.types import CommittedOffset, TopicPartition
from kop.protocol.errors import ErrorCode
from tests.sim.memory_log import MemoryLog

T = TopicPartition("t", 0)


async def test_a_refused_new_group_tells_the_operator_why(caplog: pytest.LogCaptureFixture) -> None:
    store = OffsetsStore(MemoryLog(), "persistent://public/__kop/consumer-offsets", 2)
    service = GroupService(store, Limits(max_groups=1))
    await service.start()
    try:
        while not service.loaded:
            await asyncio.sleep(0.001)
        offsets = {T: CommittedOffset(1)}
        assert await service.commits.commit("first", -1, "", None, offsets) is ErrorCode.none
        with caplog.at_level(logging.WARNING, logger="kop.groups.service"):
            for group in ("second", "third"):
                code = await service.commits.commit(group, -1, "", None, offsets)
                assert code is ErrorCode.coordinator_not_available
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "max_groups=1" in warnings[0] and "second" in warnings[0]
        assert await service.commits.commit("first", -1, "", None, offsets) is ErrorCode.none
    finally:
        await service.close()


async def test_each_tenant_has_its_share_and_transactional_commits_need_room_too() -> None:
    """Issue 33, finding 6: max_groups was one pool for every tenant, and a
    TxnOffsetCommit from a producer outside the group (generation -1, no member) took
    none of it, so a role that may only consume, or a transactional producer, could
    hold every group slot of the instance. Each tenant now holds at most
    max_groups_per_tenant (the default namespace's bare ids count as its tenant's),
    and a transactional commit to a new group needs room like any other."""
    store = OffsetsStore(MemoryLog(), "persistent://public/__kop/consumer-offsets", 2)
    limits = Limits(max_groups=10, max_groups_per_tenant=2, default_tenant="public")
    service = GroupService(store, limits)
    await service.start()
    try:
        while not service.loaded:
            await asyncio.sleep(0.001)
        offsets = {T: CommittedOffset(1)}

        async def commit(group: str, producer: tuple[int, int] | None = None) -> ErrorCode:
            return await service.commits.commit(group, -1, "", None, offsets, producer=producer)

        assert await commit("//evil/ns/a") is ErrorCode.none
        assert await commit("//evil/other/b", producer=(7, 0)) is ErrorCode.none
        refused = ErrorCode.coordinator_not_available
        assert await commit("//evil/ns/c") is refused  # its share is held
        assert await commit("//evil/ns/d", producer=(7, 0)) is refused
        assert await commit("//evil/ns/a") is ErrorCode.none  # its own groups go on
        assert await commit("mine") is ErrorCode.none  # the default namespace: "public"
        assert await commit("//public/other/g") is ErrorCode.none
        assert await commit("//public/other/h") is refused
        assert await commit("//acme/orders/g") is ErrorCode.none  # every other tenant
        assert await service.delete("//evil/ns/a") is ErrorCode.none
        assert await commit("//evil/ns/c") is ErrorCode.none  # room again
    finally:
        await service.close()
