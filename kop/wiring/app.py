"""Composition root: wires config, storage, logs, handlers, listener and admin HTTP.

The only place that picks `kop/pulsar` as the storage (`PulsarBackend`); tests
hand `Gateway` an in-memory backend instead to drive the whole server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from kop.api.context import Broker, Services
from kop.cluster.epochs import LeaderEpochs
from kop.cluster.joining import JoinRefused, Liveness, join
from kop.cluster.membership import Membership
from kop.cluster.ownership import Ownership
from kop.config.settings import KopConfig
from kop.entries.formats import EntryFormat
from kop.groups.report import GroupReport
from kop.groups.service import GroupService
from kop.log.checkpoint_store import CheckpointStore
from kop.log.settings import LogSettings
from kop.ops.http import AdminServer
from kop.ops.metrics import Metrics
from kop.ops.viewer import Viewer
from kop.partitions import handover
from kop.partitions.manager import LogManager
from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.client import PulsarSession
from kop.pulsar.compaction import PulsarCompaction
from kop.pulsar.credentials import PulsarCredentials
from kop.pulsar.permissions import PulsarPermissions
from kop.pulsar.preflight import Preflight, PreflightError
from kop.pulsar.properties import NamespaceProperties
from kop.pulsar.wire.auth import AuthConfigError, make_authentication
from kop.pulsar.wire.options import ConnectOptions
from kop.pulsar.wire.tls import TlsConfigError, TlsOptions
from kop.security.instances import ClusterSecret
from kop.server.connection import Limits
from kop.server.listener import KafkaListener
from kop.storage.credentials import CredentialStore
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.permissions import PermissionStore
from kop.storage.port import Compaction, MessageLog, StorageAdmin
from kop.storage.quotas import QuotaStore
from kop.systables.state_topics import StateTopicLost, StateTopicWatch, ensure_state_topics
from kop.topics.catalog import ENTRY_METADATA_ALLOWANCE, TopicCatalog, TopicDefaults
from kop.topics.partition_budget import PartitionBudget
from kop.txn.producer_ids import TOPIC as PRODUCER_IDS_TOPIC
from kop.txn.producer_ids import ProducerIdBlocks
from kop.txn.service import TxnService
from kop.wiring.groups import OFFSETS_STATE_TOPIC, start_groups, system_topic
from kop.wiring.listeners import ListenerSetupError, Security, advertised
from kop.wiring.txn import STATE_TOPIC, start_transactions

log = logging.getLogger(__name__)


class StartupError(Exception):
    """kop cannot start; the message says what to do."""


class Backend(Protocol):
    """Where kop's data lives: the storage port's two halves, prepared for kop."""

    admin: StorageAdmin
    compaction: Compaction
    permissions: PermissionStore
    credentials: CredentialStore
    quotas: QuotaStore

    async def prepare(self, config: KopConfig) -> MessageLog: ...

    async def close(self) -> None: ...


def connect_options(c: KopConfig) -> ConnectOptions:
    """Credentials, TLS and listener for every connection to Pulsar, wire and admin;
    a setting that cannot work is a StartupError now, not a timeout later."""
    try:
        auth = make_authentication(c.pulsar_auth_plugin, c.pulsar_auth_params.get_secret_value())
        tls = TlsOptions(
            trust_certs_file=c.pulsar_tls_trust_certs_file,
            hostname_verification=c.pulsar_tls_hostname_verification,
            cert_file=c.pulsar_tls_cert_file,
            key_file=c.pulsar_tls_key_file,
            allow_insecure=c.pulsar_tls_allow_insecure,
        )
        options = ConnectOptions(auth=auth, tls=tls, listener_name=c.pulsar_listener_name)
        if c.pulsar_service_url.startswith("pulsar+ssl") or c.pulsar_http_url.startswith("https"):
            options.ssl_context()
    except (AuthConfigError, TlsConfigError) as exc:
        raise StartupError(str(exc)) from None
    return options


class PulsarBackend:
    def __init__(self, config: KopConfig, wait_s: float = 60.0) -> None:
        self._options = connect_options(config)
        self._pulsar_admin = PulsarAdmin(config.pulsar_http_url, options=self._options)
        self.admin: StorageAdmin = self._pulsar_admin
        self.compaction: Compaction = PulsarCompaction(self._pulsar_admin)
        self.permissions: PermissionStore = PulsarPermissions(self._pulsar_admin.request)
        system = Namespace(*config.system_namespace.split("/"))
        self.credentials: CredentialStore = PulsarCredentials(self._pulsar_admin.request, system)
        self.quotas: QuotaStore = NamespaceProperties(
            self._pulsar_admin.request, system, "kop-quota:"
        )
        self._wait_s = wait_s
        self._session: PulsarSession | None = None

    async def prepare(self, config: KopConfig) -> MessageLog:
        self._session = PulsarSession(
            config.pulsar_service_url,
            self._pulsar_admin,
            send_budget_bytes=config.pulsar_send_budget_bytes,
            read_ahead_bytes=config.pulsar_read_ahead_bytes,
            max_uncompressed_bytes=config.max_uncompressed_entry_bytes,
            options=self._options,
        )
        system_tenant, system_name = config.system_namespace.split("/")
        preflight = Preflight(
            admin=self._pulsar_admin,
            client=self._session.wire,
            http_url=config.pulsar_http_url,
            service_url=config.pulsar_service_url,
            serving=Namespace(config.tenant, config.namespace),
            system=Namespace(system_tenant, system_name),
            wait_s=self._wait_s,
        )
        try:
            await preflight.run()
        except PreflightError as exc:
            raise StartupError(str(exc)) from None
        return self._session

    async def close(self) -> None:
        """The Pulsar client first: one left open at exit aborts the process."""
        try:
            if self._session is not None:
                await self._session.close()
        finally:
            await self._pulsar_admin.close()


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


class Gateway:
    def __init__(self, config: KopConfig, backend: Backend | None = None) -> None:
        self.config = config
        self.metrics = Metrics()
        self.backend: Backend = backend or PulsarBackend(config)
        self.logs: LogManager | None = None
        self.groups: GroupService | None = None
        self.txns: TxnService | None = None
        self.membership: Membership | None = None
        self.epochs: LeaderEpochs | None = None
        self._listener: KafkaListener | None = None
        self._http: AdminServer | None = None
        self._handover: asyncio.Task[None] | None = None
        self._state_watch: asyncio.Task[None] | None = None
        self._producer_ids: ProducerIdBlocks | None = None
        self._security: Security | None = None
        self._stopped = False

    async def _join(
        self, storage: MessageLog, broker: Broker, secret: ClusterSecret | None
    ) -> Ownership:
        """Join the live instances (kop.cluster.joining), or a StartupError saying why not."""
        c = self.config
        me = broker.member(uuid.uuid4().hex)
        system = Namespace(*c.system_namespace.split("/"))
        liveness = Liveness(c.heartbeat_interval_s, c.member_ttl_s)
        admin = self.backend.admin
        try:
            self.membership = await join(storage, admin, system, me, liveness, secret)
        except JoinRefused as exc:
            raise StartupError(str(exc)) from None
        self.metrics.watch_membership(self.membership)
        return Ownership(self.membership, me)

    async def start(self) -> None:
        """Everything, or nothing: a start that fails half-way stops what it started
        (background tasks of the coordinators included) before the error goes on."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        c = self.config
        storage = await self.backend.prepare(c)
        try:
            self._security = Security(
                c, self.backend.permissions, self.backend.credentials, self.backend.quotas
            )
        except ListenerSetupError as exc:
            raise StartupError(str(exc)) from None
        secret = self._security.secret
        if isinstance(storage, PulsarSession):
            self.metrics.watch_readers(storage.reader_stats)
            self.metrics.watch_pulsar_memory(storage.read_ahead, storage.send_budget)
        plan = c.listener_plan()
        shown = plan[0].advertised
        broker = Broker(c.node_id, shown.host, shown.port, c.cluster_id, advertised(plan))
        ownership = await self._join(storage, broker, secret)
        store = CheckpointStore(storage, f"persistent://{c.system_namespace}/offset-index")
        self.epochs = LeaderEpochs(
            storage, f"persistent://{c.system_namespace}/kop-leader-epochs", ownership.me
        )
        await self.epochs.start()
        # A `pulsar`-format batch entry is split where Pulsar would refuse it.
        entry_limit = await self.backend.admin.message_size_limit() - ENTRY_METADATA_ALLOWANCE
        settings = replace(log_settings(c), max_entry_bytes=max(64 << 10, entry_limit))
        self.logs = LogManager(
            storage, store, settings, compaction=self.backend.compaction, owns=ownership.mine,
            view=lambda: ownership.version, epochs=self.epochs,
        )  # fmt: skip
        self.metrics.watch(self.logs)
        await self.logs.start()
        catalog = topic_catalog(c, self.backend.admin)
        self._handover = asyncio.create_task(
            handover.follow(ownership, self.logs, catalog, self.epochs.taken_elsewhere),
            name="handover",
        )
        watch = await state_topics(c, self.backend.admin, self.metrics.state_topic_lost)
        self._state_watch = asyncio.create_task(watch.run(), name="state-topic-watch")
        self.groups = await start_groups(
            c, self.backend.admin, storage, self.logs, catalog, ownership, self.epochs
        )
        producer_ids = await producer_id_blocks(c, self.backend.admin, storage)
        self._producer_ids = producer_ids
        self.txns = await start_transactions(
            c, self.backend.admin, storage, self.logs, ownership, producer_ids.next, self.groups,
            secret,
        )  # fmt: skip
        services = Services(
            broker=broker,
            catalog=catalog,
            logs=self.logs,
            auto_create_topics=c.auto_create_topics,
            fetch_max_wait_cap_ms=c.fetch_max_wait_cap_ms,
            fetch_max_bytes_cap=c.fetch_max_bytes_cap,
            groups=self.groups,
            offsets_topic_partitions=c.offsets_topic_partitions if self.groups else 0,
            ownership=ownership,
            producer_ids=producer_ids,
            txns=self.txns,
            acls=self._security.acls,
            scram=self._security.users,
            quotas=self._security.quotas,
        )
        limits = connection_limits(c)
        default_ns = Namespace(c.tenant, c.namespace)
        self.metrics.watch_groups(self.groups, self.logs)
        self._listener = KafkaListener(services, default_ns, limits, self.metrics)
        self.metrics.watch_memory(self._listener.requests, self._listener.answers)
        await self._serve(default_ns)
        if c.admin_port:
            self._http = await admin_http(
                c, self.metrics, self.logs, self.groups, catalog, ownership, self._security,
                self.backend.admin,
            )  # fmt: skip
        log.info(
            "kop ready: node %d, Kafka on %s (advertised %s), admin HTTP on %d, Pulsar %s",
            c.node_id,
            ", ".join(str(lst.bind) for lst in plan),
            ", ".join(str(lst.advertised) for lst in plan),
            c.admin_port,
            c.pulsar_service_url,
        )

    async def _serve(self, default_ns: Namespace) -> None:
        """Every configured listener, with its TLS and SASL (kop.wiring.listeners)."""
        c = self.config
        assert self._listener is not None and self._security is not None
        try:
            endpoints = self._security.binds(default_ns)
        except ListenerSetupError as exc:
            raise StartupError(str(exc)) from None
        try:
            await self._listener.serve(endpoints)
        except OSError as exc:
            raise StartupError(
                f"cannot listen on {c.listeners or f'{c.listen_host}:{c.port}'}: {exc.strerror}; "
                "stop what uses the port or set KOP_LISTENERS (or KOP_PORT)"
            ) from exc
        self._security.start()

    @property
    def kafka_port(self) -> int:
        """The port actually listened on (the configured one, or the one picked for 0)."""
        assert self._listener is not None
        return self._listener.port

    async def stop(self) -> None:
        if self._stopped:  # a failed start stopped it already
            return
        self._stopped = True
        await self._stop()

    async def _stop(self) -> None:
        """The others are told this instance leaves (they take its partitions and
        groups over at once), in-flight requests finish, the index is flushed, then
        storage is let go. Every step runs even if one before it failed: a Pulsar
        client left open at exit aborts the process from its C++ threads."""
        steps = [
            self.membership.leave if self.membership is not None else None,
            self._hand_over,
            self._listener.stop if self._listener is not None else None,
            self._http.stop if self._http is not None else None,
            self.txns.close if self.txns is not None else None,
            self._producer_ids.close if self._producer_ids is not None else None,
            self.groups.close if self.groups is not None else None,
            self.logs.close if self.logs is not None else None,
            self.epochs.close if self.epochs is not None else None,
            self.backend.close,
        ]
        for step in steps:
            if step is None:
                continue
            try:
                await step()
            except Exception:
                log.exception("during shutdown")

    @property
    def kafka_ports(self) -> dict[str, int]:
        """Each listener's bound port, by its name."""
        assert self._listener is not None
        return self._listener.ports

    async def _hand_over(self) -> None:
        """Every partition let go (its index persisted) for its next owner."""
        if self._security is not None:
            await self._security.stop()
        for task in (self._handover, self._state_watch):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.logs is not None:
            await self.logs.release(list(self.logs.owned()))
