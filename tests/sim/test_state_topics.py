"""kop's state topics remember each other (issue 33): a start that finds the offsets or
transaction state topic deleted or replaced under kop refuses with one line instead of
making it anew empty (which forgot every group's committed offsets, silently), unless
told to begin afresh; while kop runs, a metric says so. Before, a start after
`pulsar-admin topics delete-partitioned-topic .../consumer-offsets` just made it again."""

from __future__ import annotations

import asyncio
import random

import pytest

from kop.config.settings import KopConfig
from kop.storage.naming import Namespace, PulsarTopic
from kop.systables.state_topics import SIBLING_ID, STATE_ID, StateTopicLost, StateTopicWatch
from kop.systables.state_topics import ensure_state_topics as ensure
from kop.wiring.app import Gateway
from kop.wiring.errors import StartupError
from tests.gateway.memory_gateway import free_port
from tests.sim.memory_admin import MemoryAdmin, MemoryBackend
from tests.sim.memory_log import MemoryLog

NS = Namespace("public", "__kop")
OFFSETS = PulsarTopic(NS, "consumer-offsets", "consumer-offsets")
TXN = PulsarTopic(NS, "transaction-state", "transaction-state")
PAIR = ((OFFSETS, 4), (TXN, 2))


async def test_the_first_start_makes_both_and_each_remembers_the_other() -> None:
    admin = MemoryAdmin(MemoryLog())
    ids = await ensure(admin, PAIR)
    assert isinstance(ids, dict)
    offsets, txn = admin.topics[OFFSETS.full], admin.topics[TXN.full]
    assert (offsets.partitions, txn.partitions) == (4, 2)
    assert offsets.properties[STATE_ID] == ids[OFFSETS.full] == txn.properties[SIBLING_ID]
    assert txn.properties[STATE_ID] == ids[TXN.full] == offsets.properties[SIBLING_ID]
    assert (await ensure(admin, PAIR)) == ids  # every later start: the same


@pytest.mark.parametrize("victim", [OFFSETS, TXN])
async def test_a_deleted_state_topic_stops_the_start(victim: PulsarTopic) -> None:
    admin = MemoryAdmin(MemoryLog())
    await ensure(admin, PAIR)
    await admin.delete(victim, partitioned=True)
    with pytest.raises(StateTopicLost, match=f"{victim.full} was deleted"):
        await ensure(admin, PAIR)
    assert victim.full not in admin.topics  # nothing made anew


async def test_a_replaced_state_topic_stops_the_start() -> None:
    admin = MemoryAdmin(MemoryLog())
    await ensure(admin, PAIR)
    await admin.delete(OFFSETS, partitioned=True)
    (await admin.create_partitioned(OFFSETS, 4, {}))  # made again by someone else
    with pytest.raises(StateTopicLost, match="consumer-offsets was replaced"):
        await ensure(admin, PAIR)


async def test_told_to_begin_afresh_it_does_and_remembers_the_new_one() -> None:
    admin = MemoryAdmin(MemoryLog())
    old = await ensure(admin, PAIR)
    await admin.delete(OFFSETS, partitioned=True)
    new = await ensure(admin, PAIR, recreate=True)
    assert isinstance(old, dict) and isinstance(new, dict)
    assert new[OFFSETS.full] != old[OFFSETS.full] and new[TXN.full] == old[TXN.full]
    assert (await ensure(admin, PAIR)) == new


async def test_topics_made_by_a_kop_before_this_check_are_adopted() -> None:
    admin = MemoryAdmin(MemoryLog())
    await admin.create_partitioned(OFFSETS, 4, {})
    await admin.create_partitioned(TXN, 2, {})
    ids = await ensure(admin, PAIR)
    assert (await ensure(admin, PAIR)) == ids


async def test_while_kop_runs_the_watch_reports_a_lost_topic() -> None:
    admin = MemoryAdmin(MemoryLog())
    ids = await ensure(admin, PAIR)
    assert isinstance(ids, dict)
    seen: dict[str, bool] = {}
    topics = {"consumer-offsets": OFFSETS, "transaction-state": TXN}
    watch = StateTopicWatch(admin, topics, ids, lambda t, lost: seen.__setitem__(t, lost))
    await watch.look()
    assert seen == {"consumer-offsets": False, "transaction-state": False}
    await admin.delete(TXN, partitioned=True)
    await watch.look()
    assert seen == {"consumer-offsets": False, "transaction-state": True}


async def test_a_gateway_refuses_to_start_over_a_deleted_offsets_topic() -> None:
    backend = MemoryBackend()

    def config(**extra: object) -> KopConfig:
        return KopConfig(listen_host="127.0.0.1", port=free_port(), admin_port=0, **extra)  # type: ignore[arg-type]

    first = Gateway(config(), backend)
    await first.start()
    await first.stop()
    await backend.admin.delete(OFFSETS, partitioned=True)
    with pytest.raises(StartupError, match="consumer-offsets was deleted"):
        await Gateway(config(), backend.instance()).start()
    again = Gateway(config(recreate_lost_state_topics=True), backend.instance())
    await again.start()
    await again.stop()


class _Interleaving:
    """The admin as instances starting together see it: every call may let others'
    calls run first, in an order a seed decides (`kop standalone --instances 3` in CI:
    one instance read the offsets topic as missing, another then made both, and the
    first read the transaction state remembering the offsets topic: "was deleted")."""

    def __init__(self, admin: MemoryAdmin, seed: int) -> None:
        self._admin = admin
        self._random = random.Random(seed)

    def __getattr__(self, name: str) -> object:
        call = getattr(self._admin, name)

        async def later(*args: object, **kwargs: object) -> object:
            for _ in range(self._random.randrange(6)):
                await asyncio.sleep(0)
            return await call(*args, **kwargs)

        return later


@pytest.mark.parametrize("legacy", [False, True], ids=["first start", "adopting"])
@pytest.mark.parametrize("seed", range(40))
async def test_instances_starting_together_agree_and_none_refuses(seed: int, legacy: bool) -> None:
    admin = MemoryAdmin(MemoryLog())
    if legacy:  # made by a kop before the check: each instance gives them their ids
        await admin.create_partitioned(OFFSETS, 4, {})
        await admin.create_partitioned(TXN, 2, {})
    views = [_Interleaving(admin, seed * 10 + i) for i in range(3)]
    found = await asyncio.gather(*(ensure(view, PAIR) for view in views))  # type: ignore[arg-type]
    assert found[0] == found[1] == found[2]
    assert (await ensure(admin, PAIR)) == found[0]  # and the next start agrees too
