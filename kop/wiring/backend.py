"""Where kop's data lives: the storage port's implementation, prepared for kop. Pulsar in
production (`PulsarBackend`, the only place that picks `kop/pulsar`); tests hand the
gateway an in-memory backend instead."""

from __future__ import annotations

from typing import Protocol

from kop.config.settings import KopConfig
from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.client import PulsarSession
from kop.pulsar.compaction import PulsarCompaction
from kop.pulsar.credentials import PulsarCredentials
from kop.pulsar.permissions import PulsarPermissions
from kop.pulsar.preflight import Preflight, PreflightError
from kop.pulsar.properties import GroupConfigProperties, NamespaceProperties
from kop.pulsar.schemas import PulsarTopicSchemas
from kop.pulsar.wire.auth import AuthConfigError, make_authentication
from kop.pulsar.wire.options import ConnectOptions
from kop.pulsar.wire.tls import TlsConfigError, TlsOptions
from kop.storage.credentials import CredentialStore
from kop.storage.group_configs import GroupConfigStore
from kop.storage.naming import Namespace
from kop.storage.permissions import PermissionStore
from kop.storage.port import Compaction, MessageStore, StorageAdmin
from kop.storage.quotas import QuotaStore
from kop.storage.schemas import TopicSchemas
from kop.wiring.errors import StartupError


class Backend(Protocol):
    """Where kop's data lives: the storage port's two halves, prepared for kop."""

    admin: StorageAdmin
    compaction: Compaction
    permissions: PermissionStore
    credentials: CredentialStore
    quotas: QuotaStore
    group_configs: GroupConfigStore
    schemas: TopicSchemas  # Pulsar's schema registry (kop/registry serves it)

    async def prepare(self, config: KopConfig) -> MessageStore: ...

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
        self.group_configs: GroupConfigStore = GroupConfigProperties(self._pulsar_admin.request)
        self.schemas: TopicSchemas = PulsarTopicSchemas(self._pulsar_admin.request)
        self._wait_s = wait_s
        self._session: PulsarSession | None = None

    async def prepare(self, config: KopConfig) -> MessageStore:
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
