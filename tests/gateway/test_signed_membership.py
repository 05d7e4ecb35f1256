"""Membership with the cluster secret (issue 33, findings 1 and 2): beats are signed,
a beat anyone else wrote to the members topic names no leader (before, a heartbeat
produced into `kop-members` made Metadata name an attacker's host as the leader of
a third of the partitions), and several instances refuse to run without the same
secret on each."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from kop.cluster.joining import JoinRefused, Liveness, join
from kop.cluster.member import Member
from kop.cluster.membership import Membership
from kop.sasl.peers import ClusterSecret
from kop.storage.naming import Namespace
from kop.storage.types import OutgoingEntry, OutgoingMessage
from tests.gateway.memory_gateway import until
from tests.sim.memory_admin import MemoryAdmin
from tests.sim.memory_log import MemoryLog

SYSTEM = Namespace("public", "__kop")
TOPIC = "persistent://public/__kop/kop-members"
SECRET = ClusterSecret(b"sim-cluster-secret-0123")
LIVENESS = Liveness(0.1, 0.5)


def _member(node: int, host: str = "") -> Member:
    return Member(node, host or f"kop-{node}", 9092 + node, uuid.uuid4().hex)


async def _join(store: MemoryLog, node: int, secret: ClusterSecret | None) -> Membership:
    member = _member(node, "localhost")
    joined = await join(store, MemoryAdmin(store), SYSTEM, member, LIVENESS, secret)
    JOINED.append(joined)
    return joined


JOINED: list[Membership] = []


@pytest.fixture(autouse=True)
async def _halt() -> AsyncIterator[None]:
    yield
    while JOINED:
        await JOINED.pop().halt()


def _forge(store: MemoryLog, beat: Member) -> None:
    """A heartbeat written to the members topic by someone without the secret."""
    entry = OutgoingEntry.of(OutgoingMessage(beat.encode("f" * 64), {}, beat.key, None))
    store.topic(TOPIC).append([entry], "attacker", 0)


async def test_signed_instances_see_each_other() -> None:
    store = MemoryLog()
    a = await _join(store.instance(), 0, SECRET)
    b = await _join(store.instance(), 1, SECRET)
    assert [m.node_id for m in b.live()] == [0, 1]
    assert a.live()[0].node_id == 0


async def test_a_forged_beat_names_no_member() -> None:
    store = MemoryLog()
    a = await _join(store.instance(), 0, SECRET)
    b = await _join(store.instance(), 1, SECRET)
    _forge(store, _member(5, "attacker.example"))
    _forge(store, _member(0, "attacker.example"))  # as a live node, too
    await until(lambda: sorted(a.beats.unproven) == [0, 5] == sorted(b.beats.unproven), 2)
    assert a.beats.unproven_count >= 2 and b.beats.unproven_count >= 2  # the metric
    assert [(m.node_id, m.host) for m in a.live() + b.live()] == [
        (0, "localhost"),
        (1, "localhost"),
    ] * 2


async def test_a_second_instance_without_the_secret_is_refused() -> None:
    store = MemoryLog()
    await _join(store.instance(), 0, None)
    with pytest.raises(JoinRefused, match="several instances need cluster_secret"):
        await _join(store.instance(), 1, None)


async def test_an_instance_with_the_secret_refuses_one_beating_without_it() -> None:
    store = MemoryLog()
    await _join(store.instance(), 0, None)
    with pytest.raises(JoinRefused, match="without this instance's cluster_secret"):
        await _join(store.instance(), 1, SECRET)


async def test_a_lone_instance_needs_no_secret() -> None:
    a = await _join(MemoryLog(), 0, None)
    assert [m.node_id for m in a.live()] == [0]


async def test_of_two_instances_without_the_secret_starting_together_the_later_is_refused() -> None:
    """Each first beats `joining` (which nobody counts as alive), then reads: two
    starting at the same moment each saw the other only joining, and both ran without a
    secret (D18's start race). The later now counts the earlier's joining beat."""
    store = MemoryLog()
    results = await asyncio.gather(
        _join(store.instance(), 0, None), _join(store.instance(), 1, None),
        return_exceptions=True,
    )  # fmt: skip
    refused = [r for r in results if isinstance(r, JoinRefused)]
    assert len(refused) == 1, results
    assert "several instances need cluster_secret" in str(refused[0])
