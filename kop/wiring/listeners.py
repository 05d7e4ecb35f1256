"""The listeners a configuration asks for, with their TLS and SASL, ready to serve
(composition: the only place that turns security settings into objects)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from functools import partial

from kop.config.settings import KopConfig
from kop.groups.mirror_names import SubscriptionNames
from kop.quotas.book import QuotaBook
from kop.quotas.throttles import Throttles
from kop.sasl.gatekeeper import ListenerSecurity
from kop.sasl.offer import offered
from kop.sasl.peers import PEER_MECHANISM, ClusterSecret, PeerExchange
from kop.sasl.scram_users import ScramUsers
from kop.sasl.session import SaslSession
from kop.security.acl_admin import AclAdmin
from kop.security.authorizer import Authorizer
from kop.security.errors import SecurityConfigError
from kop.security.keys import read_key
from kop.security.tokens import TokenValidator
from kop.server.endpoints import Listener
from kop.server.listener import Bind
from kop.server.tls_server import ServerTls, TlsFiles, TlsSetupError
from kop.storage.credentials import CredentialStore
from kop.storage.naming import Namespace
from kop.storage.permissions import PermissionStore
from kop.storage.quotas import QuotaStore

log = logging.getLogger(__name__)


class ListenerSetupError(Exception):
    """A listener cannot be served as configured; the message says why."""


def system_namespace(c: KopConfig) -> Namespace:
    tenant, name = c.system_namespace.split("/")
    return Namespace(tenant, name)


def server_tls(c: KopConfig) -> ServerTls | None:
    if c.ssl_cert_file is None or c.ssl_key_file is None:
        return None
    files = TlsFiles(c.ssl_cert_file, c.ssl_key_file, c.ssl_ca_file, c.ssl_client_auth)
    try:
        return ServerTls(files)
    except TlsSetupError as exc:
        raise ListenerSetupError(str(exc)) from None


def authorizer(c: KopConfig, store: PermissionStore) -> Authorizer | None:
    """Pulsar's permissions decide, when authorization is on (`authorizing`)."""
    if not c.authorizing:
        return None
    names = SubscriptionNames(c.group_subscription_prefix)
    return Authorizer(store, c.superusers, names.of, c.authorization_refresh_s)


def acl_admin(c: KopConfig, authorizing: Authorizer | None) -> AclAdmin | None:
    if authorizing is None:
        return None
    return AclAdmin(authorizing, SubscriptionNames(c.group_subscription_prefix))


def cluster_secret(c: KopConfig) -> ClusterSecret | None:
    """The secret kop instances prove themselves with (None: not set, one instance)."""
    spec = c.cluster_secret.get_secret_value()
    if not spec:
        return None
    try:
        raw = read_key(spec) if spec.startswith(("file:", "data:")) else spec.encode()
        return ClusterSecret(raw.strip())
    except (SecurityConfigError, ValueError) as exc:
        raise ListenerSetupError(f"cluster_secret: {exc}") from None


def binds(
    c: KopConfig,
    default: Namespace,
    tls: ServerTls | None,
    authorizer: Authorizer | None,
    users: ScramUsers,
    tokens: TokenValidator | None,
    secret: ClusterSecret | None = None,
) -> list[Bind]:
    mechanisms = offered(c.mechanisms, default, system_namespace(c), users, tokens)
    delay = c.connection_failed_authentication_delay_ms / 1000
    peer = None if secret is None else partial(PeerExchange, secret, default)
    unlisted = {} if peer is None else {PEER_MECHANISM: peer}

    def session() -> SaslSession:
        return SaslSession(mechanisms, c.connections_max_reauth_ms, unlisted=unlisted)

    out = []
    for listener in c.listener_plan():
        protocol = listener.protocol
        security = ListenerSecurity(
            listener.name,
            default,
            session if protocol.sasl else None,
            delay,
            c.anonymous_role,
            authorizer,
            peer,
            system_namespace(c),
        )
        context = tls.context if protocol.tls and tls is not None else None
        out.append(Bind(listener.bind.host, listener.bind.port, security, context))
    return out


def advertised(plan: list[Listener]) -> tuple[tuple[str, str, int], ...]:
    return tuple((lst.name, lst.advertised.host, lst.advertised.port) for lst in plan)


def reload_on_sighup(tls: ServerTls | None) -> None:
    """`kill -HUP` reloads the certificate and key at once (they are also checked for
    changes every `ssl_reload_check_s`); None: SIGHUP is let go."""
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        if tls is None:
            loop.remove_signal_handler(signal.SIGHUP)
        else:
            loop.add_signal_handler(signal.SIGHUP, partial(tls.reload, True))


class Security:
    """What the listeners need beside the handlers, with its background work: TLS
    (reloaded on change and SIGHUP), the authorizer, the SCRAM users and the client
    quotas (refreshed)."""

    def __init__(
        self, c: KopConfig, permissions: PermissionStore, credentials: CredentialStore,
        quotas: QuotaStore,
    ) -> None:  # fmt: skip
        self._config = c
        self.authorizer = authorizer(c, permissions)
        self.acls = acl_admin(c, self.authorizer)
        self.users = ScramUsers(credentials, c.scram_refresh_s)
        self.quotas = QuotaBook(quotas, Throttles(), c.quota_refresh_s)
        try:
            self.tokens = TokenValidator(c.token_settings) if c.token_settings.configured else None
        except SecurityConfigError as exc:
            raise ListenerSetupError(str(exc)) from None
        self.tls = server_tls(c)  # raises ListenerSetupError
        self.secret = cluster_secret(c)  # raises ListenerSetupError
        self._tasks: list[asyncio.Task[None]] = []

    def binds(self, default: Namespace) -> list[Bind]:
        return binds(
            self._config, default, self.tls, self.authorizer, self.users, self.tokens, self.secret
        )

    def start(self) -> None:
        c = self._config
        if self.tls is not None:
            reload_on_sighup(self.tls)
            self._tasks.append(asyncio.create_task(self.tls.watch(c.ssl_reload_check_s)))
        if any(lst.protocol.sasl for lst in c.listener_plan()):
            self._tasks.append(asyncio.create_task(self.users.run(), name="scram-users"))
        self._tasks.append(asyncio.create_task(self.quotas.run(), name="client-quotas"))

    async def stop(self) -> None:
        if self.tls is not None:
            reload_on_sighup(None)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
