"""Composition root: wires config, storage, logs, handlers, listener and admin HTTP
(the backend in `backend.py`, the parts from their settings in `parts.py`)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from kop.aio.futures import cancel_and_wait
from kop.api.context import Broker, Services
from kop.api.share_sessions import ShareSessions
from kop.cluster.epochs import LeaderEpochs
from kop.cluster.membership import Membership
from kop.cluster.ownership import Ownership
from kop.config.settings import KopConfig
from kop.groups.service import GroupService
from kop.ops.http import AdminServer
from kop.ops.loop_lag import watch_loop_lag
from kop.ops.metrics import Metrics
from kop.partitions import handover
from kop.partitions.manager import LogManager
from kop.pulsar.client import PulsarSession
from kop.sasl.peer_client import PeerClient
from kop.server.endpoints import Listener
from kop.server.listener import KafkaListener
from kop.storage.naming import Namespace
from kop.txn.service import TxnService
from kop.wiring.backend import Backend, PulsarBackend
from kop.wiring.closes import Closes
from kop.wiring.errors import StartupError
from kop.wiring.groups import start_groups
from kop.wiring.listeners import ListenerSetupError, Security, advertised
from kop.wiring.parts import (
    admin_http,
    connection_limits,
    dead_letter_writes,
    fetch_sessions,
    join_instances,
    partition_logs,
    producer_id_blocks,
    share_offsets,
    share_partitions,
    state_topics,
    topic_catalog,
)
from kop.wiring.registry import registry_core, serve_registry
from kop.wiring.txn import start_transactions

log = logging.getLogger(__name__)


class Gateway:
    """kop, started and stopped as one: each part is pushed on a stack of closes as it
    starts (kop.wiring.closes), so a stop, or a start that fails half-way, closes exactly what
    was started, the newest first. The one step out of that order is leaving: pushed
    last, it runs first, telling the other instances this one is gone and handing its
    partitions over before anything else closes."""

    def __init__(self, config: KopConfig, backend: Backend | None = None) -> None:
        self.config = config
        self.metrics = Metrics()
        self.backend: Backend = backend or PulsarBackend(config)
        self._running: Running | None = None
        self._closes = Closes()
        self._left = False
        self._stopped = False

    @property
    def running(self) -> Running:
        """The parts of a started gateway (tests and tools reach them here)."""
        if self._running is None:
            raise RuntimeError("the gateway has not started")
        return self._running

    @property
    def logs(self) -> LogManager:
        return self.running.services.logs

    @property
    def groups(self) -> GroupService:
        return self.running.services.groups

    @property
    def txns(self) -> TxnService:
        return self.running.services.txns

    @property
    def listener(self) -> KafkaListener:
        return self.running.listener

    @property
    def kafka_port(self) -> int:
        """The port actually listened on (the configured one, or the one picked for 0)."""
        return self.running.listener.port

    @property
    def kafka_ports(self) -> dict[str, int]:
        """Each listener's bound port, by its name."""
        return self.running.listener.ports

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
        self._closes.push(self.backend.close)
        storage = await self.backend.prepare(c)
        try:
            security = Security(
                c, self.backend.permissions, self.backend.credentials, self.backend.quotas
            )
        except ListenerSetupError as exc:
            raise StartupError(str(exc)) from None
        if isinstance(storage, PulsarSession):
            self.metrics.watch_readers(storage.reader_stats)
            self.metrics.watch_pulsar_memory(storage.read_ahead, storage.send_budget)
        plan = c.listener_plan()
        shown = plan[0].advertised
        broker = Broker(c.node_id, shown.host, shown.port, c.cluster_id, advertised(plan))
        membership, me = await join_instances(
            c, self.backend.admin, storage, broker, security.secret
        )
        self.metrics.watch_membership(membership)
        self._closes.push(lambda: self._leave(membership))
        ownership = Ownership(membership, me)
        epochs = LeaderEpochs(
            storage, f"persistent://{c.system_namespace}/kop-leader-epochs", ownership.me
        )
        self._closes.push(epochs.close)
        await epochs.start()
        registry = await registry_core(c, self.backend, storage)
        if registry is not None:
            self._closes.push(registry.table.close)
            self._closes.push(registry.framings.close)
        framings = None if registry is None else registry.framings
        logs = await partition_logs(c, self.backend, storage, ownership, epochs, framings)
        self._closes.push(logs.close)
        self.metrics.watch(logs)
        await logs.start()
        catalog = topic_catalog(c, self.backend.admin)
        follow = handover.follow(ownership, logs, catalog, epochs.taken_elsewhere)
        following = [self._closes.task(follow, "handover")]
        watch = await state_topics(c, self.backend.admin, self.metrics.state_topic_lost)
        following.append(self._closes.task(watch.run(), "state-topic-watch"))
        groups = await start_groups(
            c,
            self.backend.admin,
            storage,
            logs,
            catalog,
            ownership,
            epochs,
            self.backend.group_configs,
        )
        self._closes.push(groups.close)
        producer_ids = await producer_id_blocks(c, self.backend.admin, storage)
        self._closes.push(producer_ids.close)
        peers = PeerClient(ownership.me.instance, security.secret)
        self._closes.push(peers.close)
        txns = await start_transactions(
            c, self.backend.admin, storage, logs, ownership, producer_ids.next, groups, peers
        )
        self._closes.push(txns.close)
        shares = share_partitions(storage, self.backend.admin, groups, logs)
        self._closes.push(shares.close)
        self._closes.task(shares.run_timers(), "share-partitions")
        services = Services(
            broker=broker, catalog=catalog, logs=logs, groups=groups, txns=txns,
            ownership=ownership, producer_ids=producer_ids, scram=security.users,
            quotas=security.quotas, auto_create_topics=c.auto_create_topics,
            fetch_max_wait_cap_ms=c.fetch_max_wait_cap_ms,
            fetch_max_bytes_cap=c.fetch_max_bytes_cap,
            offsets_topic_partitions=c.offsets_topic_partitions,
            fetch_sessions=fetch_sessions(c), share_partitions=shares,
            share_sessions=ShareSessions(c.group_share_max_share_sessions), acls=security.acls,
            share_offsets=share_offsets(
                self.backend.admin, shares, groups, logs, ownership, peers
            ),
        )  # fmt: skip
        shares.dead_letters = dead_letter_writes(c, services, peers)
        self.metrics.watch_fetch_sessions(services.fetch_sessions)
        default_ns = Namespace(c.tenant, c.namespace)
        self.metrics.watch_groups(groups, logs)
        listener = KafkaListener(services, default_ns, connection_limits(c), self.metrics)
        self.metrics.watch_memory(listener.requests, listener.answers)
        self._closes.task(watch_loop_lag(self.metrics.loop_lag.observe), "loop-lag")
        self._closes.push(listener.stop)
        await self._serve(listener, security, default_ns)
        http = None
        if c.admin_port:
            http = await admin_http(
                c, self.metrics, logs, groups, catalog, ownership, security, self.backend.admin
            )
            self._closes.push(http.stop)
        if registry is not None:
            self._closes.push((await serve_registry(c, registry, security)).stop)
        self._running = Running(services, membership, epochs, listener, security, http)
        # Pushed last, so run first at stop: the others take this instance's partitions
        # and groups over at once, then its in-flight requests finish.
        self._closes.push(lambda: self._hand_over(membership, following, logs))
        _log_ready(c, plan)

    async def _serve(
        self, listener: KafkaListener, security: Security, default_ns: Namespace
    ) -> None:
        """Every configured listener, with its TLS and SASL (kop.wiring.listeners)."""
        c = self.config
        try:
            endpoints = security.binds(default_ns)
        except ListenerSetupError as exc:
            raise StartupError(str(exc)) from None
        try:
            await listener.serve(endpoints)
        except OSError as exc:
            raise StartupError(
                f"cannot listen on {c.listeners or f'{c.listen_host}:{c.port}'}: {exc.strerror}; "
                "stop what uses the port or set KOP_LISTENERS (or KOP_PORT)"
            ) from exc
        security.start()
        self._closes.push(security.stop)

    async def stop(self) -> None:
        if self._stopped:  # a failed start stopped it already
            return
        self._stopped = True
        await self._closes.close()

    async def _leave(self, membership: Membership) -> None:
        """The others are told this instance is gone (once: a whole stop leaves early,
        in `_hand_over`; a failed start leaves here)."""
        if not self._left:
            self._left = True
            await membership.leave()

    async def _hand_over(
        self, membership: Membership, following: list[asyncio.Task[None]], logs: LogManager
    ) -> None:
        """Leave, stop following ownership (no partition is opened again), then let every
        partition go (its index persisted) for its next owner."""
        await self._leave(membership)
        for task in following:
            await cancel_and_wait(task)
        await logs.release(list(logs.owned()))


def _log_ready(c: KopConfig, plan: list[Listener]) -> None:
    log.info(
        "kop ready: node %d, Kafka on %s (advertised %s), admin HTTP on %d, Schema Registry "
        "on %d, Pulsar %s",
        c.node_id,
        ", ".join(str(lst.bind) for lst in plan),
        ", ".join(str(lst.advertised) for lst in plan),
        c.admin_port,
        c.schema_registry_port,
        c.pulsar_service_url,
    )


@dataclass(frozen=True)
class Running:
    """What a started gateway is made of."""

    services: Services
    membership: Membership
    epochs: LeaderEpochs
    listener: KafkaListener
    security: Security
    http: AdminServer | None
