"""The transaction coordinator of one instance, wired from the configuration
(composition): the transaction state topic beside the offsets topic, the store, the
markers written through the partition logs, and the service that follows ownership."""

from __future__ import annotations

import time
from collections.abc import Callable

from kop.cluster.ownership import Ownership
from kop.config.settings import KopConfig
from kop.groups.scope import GroupScope
from kop.groups.service import GroupService
from kop.partitions.manager import LogManager
from kop.sasl.peer_client import PeerClient
from kop.storage.naming import Namespace
from kop.storage.port import MessageLog, StorageAdmin
from kop.txn.coordinator import TxnCoordinator
from kop.txn.id_room import TxnLimits
from kop.txn.markers import TxnMarkers
from kop.txn.peers import Peers
from kop.txn.service import TxnService
from kop.txn.store import TxnStore
from kop.wiring.groups import system_topic

STATE_TOPIC = "transaction-state"


def wall_ms() -> int:
    return int(time.time() * 1000)


async def start_transactions(
    c: KopConfig,
    admin: StorageAdmin,
    storage: MessageLog,
    logs: LogManager,
    ownership: Ownership,
    new_id: Callable[[], int],
    groups: GroupService,
    client: PeerClient,
) -> TxnService:
    """The state topic (created partitioned on first start) and the coordinator, which
    loads its partitions in the background (COORDINATOR_LOAD_IN_PROGRESS until done)."""
    topic = await system_topic(admin, c, STATE_TOPIC, c.transaction_state_partitions)
    store = TxnStore(storage, topic.full, c.transaction_state_partitions)
    peers = Peers(client)
    markers = TxnMarkers(
        logs, ownership.mine, wall_ms, groups.pending, groups.offsets_topic,
        owner=ownership.owner, peers=peers,
    )  # fmt: skip
    limits = TxnLimits(
        max_ids_per_tenant=c.max_transactional_ids_per_tenant,
        id_expiration_ms=c.transactional_id_expiration_ms,
        cleanup_interval_ms=c.transaction_remove_expired_transaction_cleanup_interval_ms,
        default_tenant=c.tenant,
    )
    coordinator = TxnCoordinator(
        store, markers, c.transaction_max_timeout_ms, new_id, wall_ms, limits
    )
    scope = GroupScope(Namespace(c.tenant, c.namespace))
    service = TxnService(
        store, coordinator, ownership, c.transaction_abort_check_s, scope, peers,
        version=c.transaction_version,
    )  # fmt: skip
    await service.start()
    return service
