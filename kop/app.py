"""Composition root: wires config, Pulsar, logs, handlers, listener and admin HTTP."""

from __future__ import annotations

import asyncio
import logging
import time

from kop.api.context import Broker, Services
from kop.config import KopConfig
from kop.log.checkpoint_store import CheckpointStore
from kop.log.entry_format import EntryFormat
from kop.log.manager import LogManager
from kop.log.settings import LogSettings
from kop.log.topics import TopicCatalog, TopicDefaults
from kop.ops.http import AdminServer
from kop.ops.metrics import Metrics
from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.client import PulsarSession
from kop.server.connection import Limits
from kop.server.listener import KafkaListener
from kop.storage.naming import Namespace

log = logging.getLogger(__name__)

# Broker settings kop depends on, with why (see README "Pulsar settings").
REQUIRED_BROKER_SETTINGS = {
    "brokerDeleteInactiveTopicsEnabled": (
        "false",
        "Pulsar would delete Kafka topics that have no producer or subscription for a while",
    ),
}


class StartupError(Exception):
    """kop cannot start; the message says what to do."""


class Gateway:
    def __init__(self, config: KopConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self._admin = PulsarAdmin(config.pulsar_http_url)
        self._session: PulsarSession | None = None
        self._logs: LogManager | None = None
        self._listener: KafkaListener | None = None
        self._http: AdminServer | None = None

    async def start(self, pulsar_wait_s: float = 60.0) -> None:
        c = self.config
        await self._wait_for_pulsar(pulsar_wait_s)
        await self._check_broker_settings()
        default_ns = Namespace(c.tenant, c.namespace)
        system_tenant, system_name = c.system_namespace.split("/")
        await self._admin.serve_namespace(default_ns)
        await self._admin.configure_system_namespace(Namespace(system_tenant, system_name), 1 << 20)
        self._session = PulsarSession(
            c.pulsar_service_url,
            self._admin,
            batching_delay_ms=c.pulsar_batching_delay_ms,
            send_budget_bytes=c.pulsar_send_budget_bytes,
        )
        store = CheckpointStore(self._session, f"persistent://{c.system_namespace}/offset-index")
        settings = LogSettings(
            checkpoint_interval=c.checkpoint_interval,
            max_checkpoints=c.max_checkpoints,
            tail_buffer_bytes=c.tail_buffer_bytes,
            write_timeout_s=c.write_timeout_s,
            open_wait_s=c.open_wait_s,
            retention_check_s=c.retention_check_s,
            history_readers=c.history_readers,
            max_producers=c.max_producers,
        )
        self._logs = LogManager(self._session, store, settings)
        await self._logs.start()
        defaults = TopicDefaults(
            entry_format=EntryFormat(c.default_entry_format),
            partitions=c.default_partitions,
            retention_ms=c.retention_ms,
            retention_bytes=c.retention_bytes,
            max_message_bytes=c.max_message_bytes,
        )
        services = Services(
            broker=Broker(c.node_id, c.advertised_host, c.kafka_advertised_port, c.cluster_id),
            catalog=TopicCatalog(self._admin, defaults),
            logs=self._logs,
            auto_create_topics=c.auto_create_topics,
            fetch_max_wait_cap_ms=c.fetch_max_wait_cap_ms,
        )
        limits = Limits(c.max_request_bytes, c.max_inflight_requests, c.idle_timeout_s)
        self._listener = KafkaListener(services, default_ns, limits, self.metrics)
        try:
            await self._listener.start(c.listen_host, c.port)
        except OSError as exc:
            raise StartupError(
                f"cannot listen on {c.listen_host}:{c.port}: {exc.strerror}; "
                "stop what uses the port or set KOP_PORT"
            ) from exc
        if c.admin_port:
            self._http = AdminServer(self.metrics, self._logs, self._admin.healthy)
            try:
                await self._http.start(c.admin_host, c.admin_port)
            except OSError as exc:
                raise StartupError(
                    f"cannot listen on admin port {c.admin_port}: {exc.strerror}; "
                    "set KOP_ADMIN_PORT"
                ) from exc
        log.info(
            "kop ready: Kafka on %s:%d (advertised %s:%d), admin HTTP on %d, Pulsar %s",
            c.listen_host,
            c.port,
            c.advertised_host,
            c.kafka_advertised_port,
            c.admin_port,
            c.pulsar_service_url,
        )

    async def _wait_for_pulsar(self, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while not await self._admin.healthy():
            if time.monotonic() > deadline:
                raise StartupError(
                    f"Pulsar is not healthy at {self.config.pulsar_http_url} after {wait_s:.0f}s: "
                    "start it (`make pulsar-start`) or point KOP_PULSAR_HTTP_URL / "
                    "KOP_PULSAR_SERVICE_URL at a running cluster"
                )
            await asyncio.sleep(1.0)

    async def _check_broker_settings(self) -> None:
        runtime = await self._admin.broker_config()
        for name, (wanted, why) in REQUIRED_BROKER_SETTINGS.items():
            actual = str(runtime.get(name, "")).lower()
            if actual and actual != wanted:
                raise StartupError(
                    f"Pulsar broker setting {name}={actual}, kop needs {wanted}: {why}"
                )

    async def stop(self) -> None:
        """In-flight requests finish, checkpoints are flushed, then Pulsar is let go.
        Every step runs even if one before it failed: a Pulsar client left open at
        exit aborts the process from its C++ threads."""
        steps = [
            self._listener.stop if self._listener is not None else None,
            self._http.stop if self._http is not None else None,
            self._logs.close if self._logs is not None else None,
            self._session.close if self._session is not None else None,
            self._admin.close,
        ]
        for step in steps:
            if step is None:
                continue
            try:
                await step()
            except Exception:
                log.exception("during shutdown")
