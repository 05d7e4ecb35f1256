"""The Schema Registry, built from its settings and listening (kop/registry), or None
when `schema_registry_port` is 0."""

from __future__ import annotations

from kop.config.settings import KopConfig
from kop.registry.askers import Askers
from kop.registry.server import RegistryServer
from kop.registry.service import Limits, Registry
from kop.registry.table import PARTITIONS, TOPIC, RegistryTable
from kop.storage.naming import Namespace
from kop.storage.port import MessageLog
from kop.wiring.backend import Backend
from kop.wiring.errors import StartupError
from kop.wiring.groups import system_topic
from kop.wiring.listeners import Security, system_namespace


async def schema_registry(
    c: KopConfig, backend: Backend, storage: MessageLog, security: Security
) -> RegistryServer | None:
    if not c.schema_registry_port:
        return None
    tls = None
    if c.schema_registry_tls:
        if security.tls is None:
            raise StartupError("schema_registry_tls needs ssl_cert_file and ssl_key_file")
        tls = security.tls.context  # reloaded with the Kafka listeners' (SIGHUP, on change)
    topic = await system_topic(backend.admin, c, TOPIC, PARTITIONS)
    table = RegistryTable(storage, topic.full, fresh_s=c.schema_registry_fresh_s)
    askers = Askers(
        security.authorizer, security.tokens, Namespace(c.tenant, c.namespace),
        system_namespace(c),
    )  # fmt: skip
    limits = Limits(c.schema_registry_max_subjects, c.schema_registry_max_versions)
    server = RegistryServer(Registry(table, backend.schemas, limits), askers, table)
    try:
        await server.start(c.schema_registry_host, c.schema_registry_port, tls)
    except OSError as exc:
        await server.stop()
        raise StartupError(
            f"cannot listen on schema registry port {c.schema_registry_port}: {exc.strerror}; "
            "set KOP_SCHEMA_REGISTRY_PORT (0: no registry)"
        ) from exc
    return server
