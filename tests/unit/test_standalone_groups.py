"""Standalone groups (assign() consumers committing with generation -1, as Flink's
Kafka source does): DescribeGroups and ListGroups agree with each other and with
Kafka, Empty with protocol type "", also after a restart and after a DeleteGroups
whose write failed."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.list_groups.v5.request import ListGroupsRequest

from kop.api import group_admin, offsets
from kop.api.context import RequestContext, Services
from kop.groups.coordinator import Limits
from kop.groups.offsets_store import OffsetsStore
from kop.groups.service import GroupService
from kop.protocol.errors import ErrorCode
from kop.storage.types import StorageError
from tests.unit.test_every_version import (
    NS,
    _services,
    close_services,
    commit_request,
    delete_groups_request,
    describe_groups_request,
)

CTX = RequestContext(NS, "test", 5)


async def _commit(s: Services) -> None:
    request = commit_request("solo", {"t": [0]}, offset=3, metadata="")
    answer = (await offsets.offset_commit(s, CTX, offsets.Commit(request))).answer
    assert answer.topics[0].partitions[0].error_code is ErrorCode.none


async def _seen(s: Services) -> tuple[Any, Any]:
    """(state, protocol type) as DescribeGroups and as ListGroups give them."""
    asked = describe_groups_request("solo")
    described = (await group_admin.describe_groups(s, CTX, asked)).answer.groups[0]
    listed = [g for g in (await group_admin.list_groups(s, CTX, ListGroupsRequest())).answer.groups
              if g.group_id == "solo"]  # fmt: skip
    seen_list = (listed[0].group_state, listed[0].protocol_type) if listed else None
    return (described.group_state, described.protocol_type), seen_list


async def test_a_standalone_group_is_empty_to_describe_and_list_after_a_restart() -> None:
    s = await _services()
    assert s.groups is not None
    await _commit(s)
    assert await _seen(s) == (("Empty", ""), ("Empty", ""))
    store = s.groups._store
    await s.groups.close()
    s.groups = GroupService(OffsetsStore(store.storage, store.topic, store.partitions), Limits())
    await s.groups.start()
    try:
        while not s.groups.loaded:
            await asyncio.sleep(0.001)
        assert await _seen(s) == (("Empty", ""), ("Empty", ""))
    finally:
        await close_services(s)


async def test_a_delete_that_was_not_persisted_leaves_the_group_as_it_was() -> None:
    s = await _services()
    assert s.groups is not None
    try:
        await _commit(s)

        async def fails(group: str) -> None:
            raise StorageError("offsets topic unreachable")

        s.groups.offsets.forget_group = fails  # type: ignore[method-assign]
        answer = (await group_admin.delete_groups(s, CTX, delete_groups_request("solo"))).answer
        assert answer.results[0].error_code is ErrorCode.coordinator_not_available
        assert await _seen(s) == (("Empty", ""), ("Empty", ""))
    finally:
        await close_services(s)
