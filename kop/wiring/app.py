"""Composition root: wires config, storage, logs, handlers, listener and admin HTTP
(the backend in `backend.py`, the parts from their settings in `parts.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import replace

from kop.api.context import Broker, Services
from kop.cluster.epochs import LeaderEpochs
from kop.cluster.joining import JoinRefused, Liveness, join
from kop.cluster.membership import Membership
from kop.cluster.ownership import Ownership
from kop.config.settings import KopConfig
from kop.groups.service import GroupService
from kop.log.checkpoint_store import CheckpointStore
from kop.ops.http import AdminServer
from kop.ops.metrics import Metrics
from kop.partitions import handover
from kop.partitions.manager import LogManager
from kop.pulsar.client import PulsarSession
from kop.security.instances import ClusterSecret
from kop.server.listener import KafkaListener
from kop.storage.naming import Namespace
from kop.storage.port import MessageLog
from kop.topics.catalog import ENTRY_METADATA_ALLOWANCE
from kop.txn.producer_ids import ProducerIdBlocks
from kop.txn.service import TxnService
from kop.wiring.backend import Backend, PulsarBackend
from kop.wiring.errors import StartupError
from kop.wiring.groups import start_groups
from kop.wiring.listeners import ListenerSetupError, Security, advertised
from kop.wiring.parts import (
    admin_http,
    connection_limits,
    log_settings,
    producer_id_blocks,
    state_topics,
    topic_catalog,
)
from kop.wiring.txn import start_transactions

log = logging.getLogger(__name__)


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
