"""A share session ends with the connection that opened it, as Kafka's
ShareSessionCache drops a session when its connection closes: a share consumer that
is killed (or whose network goes) frees its session's slot and releases what its
member acquired at once, instead of holding the slot until the instance restarts.
Through sockets, over the in-memory storage; the session rules themselves at the
handler (kop/api/share_fetch.py, kop/api/share_sessions.py)."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from kio.schema.share_fetch.v2.request import ShareFetchRequest
from kio.schema.types import GroupId
from kio.static.primitive import i32, i32Timedelta

from conformance.clients.raw import RawClient
from kop.api.connection_ends import ConnectionEnds
from kop.api.context import RequestContext, Services
from kop.api.routes import Now
from kop.api.share_fetch import share_fetch
from kop.protocol.errors import ErrorCode
from kop.storage.naming import Namespace
from kop.topics.catalog import TopicCatalog, TopicDefaults
from kop.topics.partition_budget import PartitionBudget
from tests.gateway.memory_gateway import gateway_with_hot_topic, until
from tests.sim.memory_admin import MemoryAdmin
from tests.sim.memory_log import MemoryLog
from tests.sim.memory_services import memory_services

NS = Namespace("public", "default")


def _share_fetch(client: RawClient, member: str, epoch: int) -> Any:
    """ShareFetch v1 of no partition: enough to open, move or close a session."""
    return client.request(
        78, 1, group_id="g", member_id=member, share_session_epoch=epoch,
        max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20, max_records=10,
        batch_size=10, topics=(), forgotten_topics_data=(),
    )  # fmt: skip


async def test_a_share_session_ends_with_its_connection() -> None:
    async with gateway_with_hot_topic(1) as (gateway, _backend):
        sessions = gateway.running.services.share_sessions
        port = gateway.config.port
        kept, killed = await asyncio.gather(
            asyncio.to_thread(RawClient, port), asyncio.to_thread(RawClient, port)
        )
        try:
            for client, member in ((kept, "kept"), (killed, "killed")):
                opened = await asyncio.to_thread(_share_fetch, client, member, 0)
                assert opened.error_code == ErrorCode.none
            assert len(sessions) == 2
            killed.close()
            await until(lambda: len(sessions) == 1, 5)
            # the other connection's session goes on at its next epoch
            moved = await asyncio.to_thread(_share_fetch, kept, "kept", 1)
            assert moved.error_code == ErrorCode.none
        finally:
            kept.close()
        await until(lambda: len(sessions) == 0, 5)


async def _services() -> Services:
    admin = MemoryAdmin(MemoryLog())
    catalog = TopicCatalog(admin, TopicDefaults(), PartitionBudget(admin, 100, 1000, NS), ttl_s=0)
    return await memory_services(catalog, None, coordinating=False)


async def _fetched(s: Services, ctx: RequestContext, member: str, epoch: int) -> ErrorCode:
    asked = ShareFetchRequest(
        group_id=GroupId("g"), member_id=member, share_session_epoch=i32(epoch),
        max_wait=i32Timedelta.parse(datetime.timedelta(0)), min_bytes=i32(1),
        max_records=i32(10), batch_size=i32(10), topics=(), forgotten_topics_data=(),
    )  # fmt: skip
    phase = await share_fetch(s, ctx, asked)
    answer = phase.answer if isinstance(phase, Now) else await phase.answer
    return answer.error_code


async def test_a_connection_ends_only_the_sessions_it_still_holds() -> None:
    s = await _services()
    released: list[str] = []

    async def release_member(_group: str, member: str) -> None:
        released.append(member)

    s.share_partitions.release_member = release_member  # type: ignore[method-assign]
    first, second = RequestContext(NS, "a", 1), RequestContext(NS, "b", 1)
    assert await _fetched(s, first, "m", 0) == ErrorCode.none
    assert await _fetched(s, first, "closed", 0) == ErrorCode.none
    assert await _fetched(s, first, "closed", -1) == ErrorCode.none
    assert len(first.ends) == 1  # a session its client closed leaves nothing to end
    # the member opens a new session on another connection: it replaces the first
    assert await _fetched(s, second, "m", 0) == ErrorCode.none
    released.clear()
    await first.ends.run()
    assert len(s.share_sessions) == 1 and released == []  # the newer session stays
    await second.ends.run()
    assert len(s.share_sessions) == 0 and released == ["m"]


async def test_an_end_that_fails_does_not_stop_the_others() -> None:
    ends, ran = ConnectionEnds(), []

    async def failing() -> None:
        raise RuntimeError("boom")

    async def fine() -> None:
        ran.append("fine")

    ends.add("a", failing)
    ends.add("b", fine)
    ends.add("b", fine)  # one end per key
    await ends.run()
    assert ran == ["fine"] and len(ends) == 0
