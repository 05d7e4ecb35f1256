"""The parts the gateway is built from, each from its settings: limits, the log's
settings, the topic catalog, the state topics' watch, producer id blocks, admin HTTP,
this instance among the others, its partition logs."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

from kop.api.context import Broker, Services
from kop.api.dead_letter_writes import DeadLetterRules, DeadLetterWrites
from kop.api.fetch_sessions import FetchSessions
from kop.cluster.epochs import LeaderEpochs
from kop.cluster.joining import JoinRefused, Liveness, join
from kop.cluster.member import Member
from kop.cluster.membership import Membership
from kop.cluster.ownership import Ownership
from kop.config.settings import KopConfig
from kop.entries.formats import EntryFormat
from kop.groups.report import GroupReport
from kop.groups.service import GroupService, wall_ms
from kop.groups.share.offsets import ShareOffsets, ShareTarget
from kop.groups.share.partitions import SharePartitions
from kop.groups.share.state import ShareStates
from kop.log.checkpoint_store import CheckpointStore
from kop.log.framing import Framings
from kop.log.partition_log import PartitionLog
from kop.log.settings import LogSettings
from kop.ops.http import AdminServer
from kop.ops.metrics import Metrics
from kop.ops.viewer import Viewer
from kop.partitions.manager import LogManager
from kop.protocol.bounds import DEFAULT_MAX_ELEMENTS
from kop.sasl.peer_client import PeerClient
from kop.sasl.peers import ClusterSecret
from kop.server.connection import Limits
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.port import MessageLog, SharedSubscriptions, StorageAdmin
from kop.systables.state_topics import StateTopicLost, StateTopicWatch, ensure_state_topics
from kop.topics.catalog import ENTRY_METADATA_ALLOWANCE, TopicCatalog, TopicDefaults
from kop.topics.partition_budget import PartitionBudget
from kop.txn.producer_ids import TOPIC as PRODUCER_IDS_TOPIC
from kop.txn.producer_ids import ProducerIdBlocks
from kop.wiring.backend import Backend
from kop.wiring.errors import StartupError
from kop.wiring.groups import OFFSETS_STATE_TOPIC, system_topic
from kop.wiring.listeners import Security
from kop.wiring.txn import STATE_TOPIC


async def state_topics(
    c: KopConfig, admin: StorageAdmin, lost: Callable[[str, bool], None]
) -> StateTopicWatch:
    """The offsets and transaction state topics, made on the first start and checked on
    every other (kop.systables.state_topics); a StartupError if one was deleted or replaced."""
    tenant, namespace = c.system_namespace.split("/")
    ns = Namespace(tenant, namespace)
    offsets = PulsarTopic(ns, OFFSETS_STATE_TOPIC, OFFSETS_STATE_TOPIC)
    txn = PulsarTopic(ns, STATE_TOPIC, STATE_TOPIC)
    pair = ((offsets, c.offsets_topic_partitions), (txn, c.transaction_state_partitions))
    try:
        ids = await ensure_state_topics(admin, pair, c.recreate_lost_state_topics)
    except StateTopicLost as exc:
        raise StartupError(str(exc)) from None
    topics = {OFFSETS_STATE_TOPIC: offsets, STATE_TOPIC: txn}
    return StateTopicWatch(admin, topics, ids, lost)


async def producer_id_blocks(
    c: KopConfig, admin: StorageAdmin, storage: MessageLog
) -> ProducerIdBlocks:
    """Producer ids from blocks claimed in the system namespace (kop.txn.producer_ids),
    the first one claimed now."""
    topic = await system_topic(admin, c, PRODUCER_IDS_TOPIC, 1)
    blocks = ProducerIdBlocks(storage, topic.full, c.node_id)
    await blocks.start()
    return blocks


def connection_limits(c: KopConfig) -> Limits:
    return Limits(
        max_request_bytes=c.max_request_bytes,
        max_inflight=c.max_inflight_requests,
        idle_timeout_s=c.idle_timeout_s,
        request_receive_timeout_s=c.request_receive_timeout_s,
        response_send_timeout_s=c.response_send_timeout_s,
        max_connections=c.max_connections,
        max_connections_per_ip=c.max_connections_per_ip,
        max_connections_per_ip_overrides=c.max_connections_per_ip_overrides,
        max_connection_creation_rate_per_ip=c.max_connection_creation_rate_per_ip,
        connection_setup_timeout_s=c.connection_setup_timeout_s,
        max_namespaces_per_request=c.max_namespaces_per_request,
        max_queued_request_bytes=c.max_queued_request_bytes,
        max_queued_response_bytes=c.max_queued_response_bytes,
    )


def log_settings(c: KopConfig) -> LogSettings:
    return LogSettings(
        checkpoint_interval=c.checkpoint_interval,
        max_checkpoints=c.max_checkpoints,
        tail_buffer_bytes=c.tail_buffer_bytes,
        write_timeout_s=c.write_timeout_s,
        open_wait_s=c.open_wait_s,
        retention_check_s=c.retention_check_s,
        compaction_interval_s=c.compaction_interval_s,
        history_readers=c.history_readers,
        history_prefetch=c.history_prefetch,
        max_producers=c.max_producers,
        max_producers_per_tenant=c.max_producers_per_tenant,
        max_uncompressed_batch_bytes=c.max_uncompressed_batch_bytes,
    )


def share_partitions(
    storage: SharedSubscriptions, admin: StorageAdmin, groups: GroupService, logs: LogManager
) -> SharePartitions:
    """The share-partitions of the partitions this instance leads (D27)."""
    settings = groups.share.coordinator.settings
    return SharePartitions(
        storage, settings, wall_ms, logs.serving, settings_of=groups.configs.fresh,
        starts=admin,
    )  # fmt: skip


def share_offsets(
    admin: StorageAdmin, shares: SharePartitions, groups: GroupService, logs: LogManager,
    ownership: Ownership, peers: PeerClient,
) -> ShareOffsets:  # fmt: skip
    """Share groups' start offsets: each partition's told by its leader (D30)."""

    async def open_log(t: ShareTarget) -> PartitionLog:
        return await logs.partition(t.partition_topic, compacted=t.compacted, expire_ms=t.expire_ms)

    return ShareOffsets(
        ShareStates(admin, shares), open_log, lambda key: groups.scope.split(key)[1],
        ownership.owner, ownership.me, peers,
    )  # fmt: skip


def fetch_sessions(c: KopConfig) -> FetchSessions:
    """The instance's fetch session cache (D25). A session holds at most as many
    partitions as one request may name (its array elements), so a client can always
    name its whole session again in a full fetch."""
    return FetchSessions(
        slots=c.max_incremental_fetch_session_cache_slots,
        eviction_ms=c.min_incremental_fetch_session_eviction_ms,
        per_principal=c.max_incremental_fetch_sessions_per_principal,
        max_partitions=DEFAULT_MAX_ELEMENTS,
    )


def topic_catalog(c: KopConfig, admin: StorageAdmin) -> TopicCatalog:
    """Topic metadata, with the configured defaults and partition limits."""
    defaults = TopicDefaults(
        entry_format=EntryFormat(c.default_entry_format),
        pulsar_batching=c.default_pulsar_batching,
        partitions=c.default_partitions,
        retention_ms=c.retention_ms,
        retention_bytes=c.retention_bytes,
        max_message_bytes=c.max_message_bytes,
        shared_writes=c.pulsar_shared_writes,
    )
    budget = PartitionBudget(
        admin,
        per_topic=c.max_partitions_per_topic,
        total=c.max_partitions_total,
        home=Namespace(c.tenant, c.namespace),
    )
    return TopicCatalog(admin, defaults, budget, max_read_bytes=c.max_uncompressed_entry_bytes)


async def admin_http(
    c: KopConfig, metrics: Metrics, logs: LogManager, groups: GroupService, catalog: TopicCatalog,
    ownership: Ownership, security: Security, admin: StorageAdmin,
) -> AdminServer:  # fmt: skip
    """The admin HTTP API, listening, or a StartupError saying why not."""
    viewer = None
    if security.authorizer is not None:
        viewer = Viewer(security.authorizer, security.tokens, groups.scope)
    try:  # admin_token: ValueError (AdminTokenError) if its file cannot be read
        server = AdminServer(
            metrics, logs, admin.healthy, groups=GroupReport(groups, logs, catalog),
            ownership=ownership, viewer=viewer, admin_token=c.admin_token.get_secret_value(),
        )  # fmt: skip
    except ValueError as exc:
        raise StartupError(str(exc)) from None
    try:
        await server.start(c.admin_host, c.admin_port)
    except OSError as exc:
        await server.stop()  # the runner set up before the port was refused
        raise StartupError(
            f"cannot listen on admin port {c.admin_port}: {exc.strerror}; set KOP_ADMIN_PORT"
        ) from exc
    return server


async def join_instances(
    c: KopConfig, admin: StorageAdmin, storage: MessageLog, broker: Broker,
    secret: ClusterSecret | None,
) -> tuple[Membership, Member]:  # fmt: skip
    """This instance among the live ones (kop.cluster.joining), under a fresh instance
    id, or a StartupError saying why not."""
    me = broker.member(uuid.uuid4().hex)
    system = Namespace(*c.system_namespace.split("/"))
    liveness = Liveness(c.heartbeat_interval_s, c.member_ttl_s)
    try:
        return await join(storage, admin, system, me, liveness, secret), me
    except JoinRefused as exc:
        raise StartupError(str(exc)) from None


async def partition_logs(
    c: KopConfig, backend: Backend, storage: MessageLog, ownership: Ownership,
    epochs: LeaderEpochs, framings: Framings | None = None,
) -> LogManager:  # fmt: skip
    """The partition logs this instance serves (not started), over its offset index;
    a `pulsar`-format batch entry is split where Pulsar would refuse it."""
    store = CheckpointStore(storage, f"persistent://{c.system_namespace}/offset-index")
    entry_limit = await backend.admin.message_size_limit() - ENTRY_METADATA_ALLOWANCE
    settings = replace(log_settings(c), max_entry_bytes=max(64 << 10, entry_limit))
    return LogManager(
        storage, store, settings, compaction=backend.compaction, owns=ownership.mine,
        view=lambda: ownership.version, epochs=epochs, framings=framings,
    )  # fmt: skip


def dead_letter_writes(c: KopConfig, services: Services, peers: PeerClient) -> DeadLetterWrites:
    """Where share groups' dead letters go (KIP-1191, D33), by kop's errors_deadletterqueue_*."""
    rules = DeadLetterRules(
        c.errors_deadletterqueue_topic_name_prefix,
        c.errors_deadletterqueue_auto_create_topics_enable,
    )
    return DeadLetterWrites(services, peers, rules)
