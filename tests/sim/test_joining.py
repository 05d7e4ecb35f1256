"""An instance joining at start, on simulated time: a Pulsar that takes longer than
one operation to make kop's first topic (a cold standalone, a namespace bundle still
loading) is waited for, within the start's wait, not taken for a refusal."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kop.cluster.joining import Liveness, join
from kop.cluster.member import Member
from kop.storage.naming import Namespace
from kop.storage.types import StorageError
from tests.sim.clock import SimLoop
from tests.sim.memory_admin import MemoryAdmin
from tests.sim.memory_log import MemoryLog

SYSTEM = Namespace("public", "__kop")
LIVENESS = Liveness(1.0, 4.0)


def _member(node: int) -> Member:
    return Member(node, "localhost", 9092 + node, uuid.uuid4().hex)


@pytest.fixture(autouse=True)
def _resolving(loop: SimLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    """The advertised host resolves, without a resolver thread (simulated time would
    run ahead of it)."""

    async def resolved(*_args: object, **_kwargs: object) -> list[object]:
        return []

    monkeypatch.setattr(loop, "getaddrinfo", resolved)


def test_a_pulsar_slow_to_make_the_node_lock_is_waited_for(loop: SimLoop) -> None:
    store = MemoryLog()
    store.set_down(True)  # every attempt to make a topic fails after 10 s, as a cold Pulsar's

    async def start() -> list[int]:
        joining = asyncio.ensure_future(
            join(store, MemoryAdmin(store), SYSTEM, _member(0), LIVENESS, start_wait_s=60)
        )
        await asyncio.sleep(25)  # two attempts failed meanwhile
        assert not joining.done()
        store.set_down(False)
        membership = await joining
        live = [m.node_id for m in membership.live()]
        await membership.halt()
        return live

    assert loop.run(start(), within=120) == [0]


def test_a_pulsar_that_stays_away_fails_the_start_at_its_wait(loop: SimLoop) -> None:
    store = MemoryLog()
    store.set_down(True)

    async def start() -> float:
        began = asyncio.get_running_loop().time()
        with pytest.raises(StorageError, match="kop-node-0"):
            await join(store, MemoryAdmin(store), SYSTEM, _member(0), LIVENESS, start_wait_s=30)
        return asyncio.get_running_loop().time() - began

    took = loop.run(start(), within=120)
    assert 30 <= took <= 45
