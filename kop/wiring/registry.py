"""The Schema Registry (kop/registry), when `schema_registry_port` is not 0: its core,
made before the partition logs (their Confluent framing asks it for ids, kop.log.framing),
and its HTTP listener, opened once kop serves."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from kop.config.settings import KopConfig
from kop.log.framing import Framings
from kop.registry.askers import Askers
from kop.registry.server import RegistryServer
from kop.registry.service import Limits, Registry
from kop.registry.table import PARTITIONS, TOPIC, RegistryTable
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.port import MessageLog, StorageAdmin
from kop.topics.configs import PROPERTY_PREFIX, SCHEMA_FRAMING
from kop.wiring.backend import Backend
from kop.wiring.errors import StartupError
from kop.wiring.groups import system_topic
from kop.wiring.listeners import Security, system_namespace


@dataclass(frozen=True)
class RegistryParts:
    registry: Registry
    table: RegistryTable
    framings: Framings


async def registry_core(
    c: KopConfig, backend: Backend, storage: MessageLog
) -> RegistryParts | None:
    if not c.schema_registry_port:
        return None
    topic = await system_topic(backend.admin, c, TOPIC, PARTITIONS)
    table = RegistryTable(storage, topic.full, fresh_s=c.schema_registry_fresh_s)
    limits = Limits(c.schema_registry_max_subjects, c.schema_registry_max_versions)
    registry = Registry(table, backend.schemas, limits)
    framings = Framings(
        registry, c.schema_registry_framing_refresh_s, functools.partial(_framing_on, backend.admin)
    )
    registry.on_topic_schema = framings.changed
    return RegistryParts(registry, table, framings)


async def _framing_on(admin: StorageAdmin, topic: PulsarTopic) -> bool:
    """The topic's `kop.schema.registry.framing` (on unless set to false)."""
    info = await admin.topic_info(topic)
    return info is None or info.properties.get(PROPERTY_PREFIX + SCHEMA_FRAMING) != "false"


async def serve_registry(c: KopConfig, parts: RegistryParts, security: Security) -> RegistryServer:
    tls = None
    if c.schema_registry_tls:
        if security.tls is None:
            raise StartupError("schema_registry_tls needs ssl_cert_file and ssl_key_file")
        tls = security.tls.context  # reloaded with the Kafka listeners' (SIGHUP, on change)
    askers = Askers(
        security.authorizer, security.tokens, Namespace(c.tenant, c.namespace),
        system_namespace(c),
    )  # fmt: skip
    server = RegistryServer(parts.registry, askers, c.schema_registry_max_connections)
    try:
        await server.start(c.schema_registry_host, c.schema_registry_port, tls)
    except OSError as exc:
        await server.stop()
        raise StartupError(
            f"cannot listen on schema registry port {c.schema_registry_port}: {exc.strerror}; "
            "set KOP_SCHEMA_REGISTRY_PORT (0: no registry)"
        ) from exc
    return server
