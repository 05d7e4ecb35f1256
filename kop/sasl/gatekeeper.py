"""Who a connection is and what may pass before it is known: the I/O side of a
SASL listener's `SaslSession`, a TLS client certificate's role, session expiry, and
on every listener the `KOP-PEER` exchange by which another kop instance proves it
is one (kop.sasl.peers)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from kop.protocol.messages import ApiKey
from kop.sasl.peers import PEER_MECHANISM
from kop.sasl.session import Answer, MechanismFactory, SaslSession, no_exchange
from kop.security.authorizer import ALLOW_ALL, DENY_ALL, Access, Authorizer
from kop.security.hashing import off_loop
from kop.security.principal import Principal, peer_role
from kop.storage.naming import Namespace

# Kafka's sasl.server.max.receive.size: the largest frame before authentication.
MAX_UNAUTHENTICATED_FRAME = 512 * 1024


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """What a listener asks of its connections."""

    name: str  # the listener's name, as metadata advertises per listener
    namespace: Namespace  # where names resolve for a connection no principal selects
    sasl: Callable[[], SaslSession] | None = None  # a SASL listener's exchange
    failure_delay_s: float = 0.1  # Kafka's connection.failed.authentication.delay.ms
    anonymous_role: str = ""  # the role of a connection nobody authenticated
    authorizer: Authorizer | None = None  # None: every principal may do everything
    peer: MechanismFactory | None = None  # KOP-PEER, with a cluster secret (else None)
    system: Namespace | None = None  # kop's system namespace: no client's topic is there


class Gatekeeper:
    def __init__(
        self, security: ListenerSecurity, peer_info: Callable[[str], Any] = lambda name: None
    ) -> None:
        self.security = security
        self._session = security.sasl() if security.sasl is not None else None
        self._peer_info = peer_info  # the transport's: its TLS certificate, once handshaken
        self._principal: Principal | None = None
        self._access: tuple[Principal, Access] | None = None
        self._expiry: asyncio.TimerHandle | None = None
        self.on_expiry: Callable[[], None] = lambda: None

    @property
    def principal(self) -> Principal | None:
        """The SASL principal; without SASL, the client certificate's role (asked once
        a request arrives: the TLS handshake is done by then) or the anonymous one."""
        if self._principal is None and self._session is None:
            cert_role = peer_role(self._peer_info("peercert"))
            role = cert_role or self.security.anonymous_role
            mechanism = "SSL" if cert_role else "NONE"
            self._principal = Principal(role, self.security.namespace, mechanism)
        return self._principal

    @property
    def access(self) -> Access:
        """What the principal may do (fixed per principal: a re-authentication keeps it)."""
        principal = self.principal
        if self.security.authorizer is None:
            return ALLOW_ALL
        if principal is None:
            return DENY_ALL
        if self._access is None or self._access[0] is not principal:
            self._access = (principal, self.security.authorizer.bind(principal))
        return self._access[1]

    @property
    def namespace(self) -> Namespace:
        principal = self.principal
        return principal.namespace if principal else self.security.namespace

    @property
    def authenticating(self) -> bool:
        """Frames are bounded to MAX_UNAUTHENTICATED_FRAME while this holds."""
        return self._session is not None and not self._session.authenticated

    async def answer(self, api_key: int, body: Any) -> Answer:
        """A SASL request's answer (kop.server.kafka_connection decides which requests
        come here): the listener's exchange, kop instances' own, or, where neither is
        expected, Kafka's ILLEGAL_SASL_STATE with the connection kept."""
        if self._session is None:  # no SASL here: only an instance's own exchange
            peer = self.security.peer
            if peer is None or api_key != ApiKey.SASL_HANDSHAKE or body.mechanism != PEER_MECHANISM:
                return Answer(no_exchange(api_key))
            self._session = SaslSession({}, unlisted={PEER_MECHANISM: peer})
        if api_key == ApiKey.SASL_HANDSHAKE:
            answer = self._session.handshake(str(body.mechanism))
        elif self._session.costly:
            answer = await off_loop(partial(self._session.authenticate, bytes(body.auth_bytes)))
        else:
            answer = self._session.authenticate(bytes(body.auth_bytes))
        if answer.failed and self.security.failure_delay_s:
            await asyncio.sleep(self.security.failure_delay_s)
        if self._session.authenticated and self._session.principal is not self._principal:
            self._principal = self._session.principal
            self._arm(self._principal)
        return answer

    def _arm(self, principal: Principal | None) -> None:
        """The connection ends when its session does, unless re-authenticated first."""
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if principal is None or principal.expires_at is None:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, principal.expires_at - time.time())
        self._expiry = loop.call_later(delay, self.on_expiry)

    def close(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
