"""Every part a handler reaches (kop.api.context.Services), built over the in-memory
storage, so a test drives handlers without a gateway: the group and transaction
coordinators loaded, one instance leading everything, SCRAM users and client quotas
kept in memory."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from kop.api.context import Broker, CountingIds, Services
from kop.api.fetch_sessions import FetchSessions
from kop.api.share_sessions import ShareSessions
from kop.cluster.member import Member
from kop.cluster.ownership import Ownership, Solo
from kop.groups.coordinator import Limits as GroupLimits
from kop.groups.offsets_store import OffsetsStore
from kop.groups.scope import GroupScope
from kop.groups.service import GroupService
from kop.groups.share.offsets import ShareOffsets, ShareTarget
from kop.groups.share.partitions import SharePartitions
from kop.groups.share.state import ShareStates
from kop.protocol.control import Marker
from kop.quotas.book import QuotaBook
from kop.quotas.throttles import Throttles
from kop.sasl.peer_client import PeerUnreachable
from kop.sasl.scram_users import ScramUsers
from kop.storage.naming import Namespace
from kop.topics.catalog import TopicCatalog
from kop.txn.coordinator import TxnCoordinator
from kop.txn.service import TxnService
from kop.txn.state import Partition
from kop.txn.store import TxnStore
from tests.sim.memory_admin import MemoryAdmin, MemoryCredentials, MemoryRecords
from tests.sim.memory_log import MemoryLog

NS = Namespace("public", "default")
OFFSETS_PARTITIONS = 2


class _NoMarkers:
    async def write(self, partitions: frozenset[Partition], marker: Marker) -> None:
        return None


class _NoPeers:
    """Alone: there is no other instance to ask."""

    async def ask(self, to: Member, body: Any) -> Any:
        raise PeerUnreachable(f"no instance {to.node_id} here")


async def _loaded(ready: Callable[[], bool]) -> None:
    async with asyncio.timeout(5):
        while not ready():
            await asyncio.sleep(0.001)


async def memory_services(
    catalog: TopicCatalog,
    logs: Any,
    *,
    broker: Broker | None = None,
    ownership: Ownership | None = None,
    auto_create_topics: bool = True,
    coordinating: bool = True,
) -> Services:
    """`Services` over `catalog` and `logs` (a stand-in is enough when a test reads
    no partition), everything else in memory; the group and transaction coordinators
    loaded unless `coordinating` is False (a test that reaches neither leaves no
    background task behind its event loop)."""
    memory = MemoryLog()
    broker = broker or Broker(1, "localhost", 9092, "cluster")
    me = broker.member("x")
    ownership = ownership or Ownership(Solo(me), me)
    store = OffsetsStore(memory, "persistent://public/__kop/consumer-offsets", OFFSETS_PARTITIONS)
    groups = GroupService(store, GroupLimits(initial_rebalance_delay_ms=0))
    if coordinating:
        await groups.start()
        await _loaded(lambda: groups.loaded)
    txn_store = TxnStore(memory, "persistent://public/__kop/transaction-state", 2)
    ids = itertools.count(1)
    coordinator = TxnCoordinator(txn_store, _NoMarkers(), 60_000, lambda: next(ids), lambda: 0)
    txns = TxnService(txn_store, coordinator, ownership, 10.0, GroupScope(NS))
    if coordinating:
        await txns.start()
        await _loaded(lambda: txns.partitions.all_loaded)
    shares = SharePartitions(
        memory, groups.share.coordinator.settings, lambda: 0, lambda _topic: None,
        starts=MemoryAdmin(memory),
    )  # fmt: skip

    async def open_log(t: ShareTarget) -> Any:
        return await logs.partition(t.partition_topic, compacted=t.compacted)

    share_offsets = ShareOffsets(
        ShareStates(MemoryAdmin(memory), shares), open_log,
        lambda key: groups.scope.split(key)[1], ownership.owner, me, _NoPeers(),
    )  # fmt: skip
    return Services(
        broker=broker, catalog=catalog, logs=logs, groups=groups, txns=txns,
        ownership=ownership, producer_ids=CountingIds(), scram=ScramUsers(MemoryCredentials()),
        quotas=QuotaBook(MemoryRecords[str](), Throttles()), auto_create_topics=auto_create_topics,
        fetch_max_wait_cap_ms=0, fetch_max_bytes_cap=1 << 20,
        offsets_topic_partitions=OFFSETS_PARTITIONS,
        fetch_sessions=FetchSessions(1000, 120_000, 250, 100_000),
        share_partitions=shares, share_sessions=ShareSessions(), share_offsets=share_offsets,
    )  # fmt: skip
