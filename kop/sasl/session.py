"""A connection's SASL state, as a pure state machine (h11's shape): the server feeds
it SaslHandshake and SaslAuthenticate requests and asks it what else may pass.

Kafka's rules (SaslServerAuthenticator): before authentication only ApiVersions and
the SASL requests are answered, anything else closes the connection; a failed or
out-of-order exchange is answered once and the connection closed; a client
re-authenticates (KIP-368) with a new handshake of the same mechanism and must
come back as the same principal. A session ends at its `expires_at`.
"""

from __future__ import annotations

import datetime
import enum
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse
from kio.static.primitive import i64Timedelta

from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ApiKey
from kop.sasl.mechanisms import Mechanism
from kop.security.errors import AuthenticationFailed
from kop.security.principal import Principal

MechanismFactory = Callable[[], Mechanism]

# What the client is told of any failed authentication: nothing of which part failed,
# in Kafka's own words for the mechanism (what its clients print and users search for).
FAILED_MESSAGE = "Authentication failed: Invalid username or password"  # PLAIN's
SCRAM_FAILED = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
)


def failed_message(mechanism: str) -> str:
    return SCRAM_FAILED.format(mechanism) if mechanism.startswith("SCRAM-") else FAILED_MESSAGE


class State(enum.Enum):
    START = "start"  # nothing yet: ApiVersions or SaslHandshake
    HANDSHAKEN = "handshaken"  # mechanism chosen: SaslAuthenticate rounds
    AUTHENTICATED = "authenticated"
    REAUTH = "reauth"  # authenticated, a new handshake taken: SaslAuthenticate rounds
    CLOSED = "closed"  # refused: the answer is the last thing sent


Body = SaslHandshakeResponse | SaslAuthenticateResponse  # the newest versions kop serves


@dataclass(frozen=True, slots=True)
class Answer:
    """The response body (in the newest version: the server writes it at the one the
    client speaks); `close` once it is sent; `failed`: an authentication failure
    (answered after the configured delay)."""

    body: Body
    close: bool = False
    failed: bool = False
    reason: str = ""  # for kop's log


class SaslSession:
    def __init__(
        self,
        mechanisms: Mapping[str, MechanismFactory],
        max_reauth_ms: int = 0,
        clock: Callable[[], float] = time.time,
        unlisted: Mapping[str, MechanismFactory] | None = None,
    ) -> None:
        self._listed = sorted(mechanisms)  # what a client is told is enabled
        # `unlisted`: taken but never told (kop instances' own, sasl.peers)
        self._factories = {**mechanisms, **(unlisted or {})}
        self._max_reauth_ms = max_reauth_ms
        self._clock = clock
        self.state = State.START
        self.principal: Principal | None = None
        self._mechanism: Mechanism | None = None
        self._mechanism_name = ""

    @property
    def costly(self) -> bool:
        """The next SaslAuthenticate may hash a password: run it off the event loop."""
        return self._mechanism is not None and self._mechanism.costly

    @property
    def authenticated(self) -> bool:
        return self.state in (State.AUTHENTICATED, State.REAUTH)

    def handshake(self, mechanism: str) -> Answer:
        enabled = self._listed
        if self.state not in (State.START, State.AUTHENTICATED):
            return self._refuse(ErrorCode.illegal_sasl_state, "SaslHandshake out of order", enabled)
        old = self.principal if self.state is State.AUTHENTICATED else None
        if old is not None and mechanism != old.mechanism:
            why = "re-authentication changed mechanism"
            return self._refuse(ErrorCode.illegal_sasl_state, why, enabled)
        factory = self._factories.get(mechanism)
        if factory is None:
            return self._refuse(
                ErrorCode.unsupported_sasl_mechanism,
                f"mechanism {mechanism!r} not enabled",
                enabled,
            )
        self._mechanism, self._mechanism_name = factory(), mechanism
        self.state = State.HANDSHAKEN if self.state is State.START else State.REAUTH
        return Answer(SaslHandshakeResponse(error_code=ErrorCode.none, mechanisms=tuple(enabled)))

    def authenticate(self, client: bytes) -> Answer:
        if self.state not in (State.HANDSHAKEN, State.REAUTH) or self._mechanism is None:
            return self._fail(ErrorCode.illegal_sasl_state, "SaslAuthenticate before SaslHandshake")
        try:
            step = self._mechanism.step(client)
        except AuthenticationFailed as exc:
            return self._fail(ErrorCode.sasl_authentication_failed, str(exc))
        if step.principal is None:
            return Answer(_authenticate_body(step.challenge, 0))
        new = step.principal
        old = self.principal if self.state is State.REAUTH else None
        if old is not None and (old.role, old.namespace) != (new.role, new.namespace):
            why = "re-authentication changed principal"
            return self._fail(ErrorCode.sasl_authentication_failed, why)
        new = self._bounded(new)
        self.principal, self._mechanism, self.state = new, None, State.AUTHENTICATED
        lifetime = (
            0 if new.expires_at is None else max(1, int((new.expires_at - self._clock()) * 1000))
        )
        return Answer(_authenticate_body(step.challenge, lifetime))

    def _bounded(self, principal: Principal) -> Principal:
        """The session ends at the token's expiry, or after `max_reauth_ms`."""
        if not self._max_reauth_ms:
            return principal
        cap = self._clock() + self._max_reauth_ms / 1000
        if principal.expires_at is not None and principal.expires_at <= cap:
            return principal
        return replace(principal, expires_at=cap)

    def _refuse(self, code: ErrorCode, reason: str, enabled: list[str]) -> Answer:
        self.state = State.CLOSED
        body = SaslHandshakeResponse(error_code=code, mechanisms=tuple(enabled))
        return Answer(body, close=True, reason=reason)

    def _fail(self, code: ErrorCode, reason: str) -> Answer:
        self.state, self._mechanism = State.CLOSED, None
        failed = code == ErrorCode.sasl_authentication_failed
        message = failed_message(self._mechanism_name) if failed else reason
        body = _authenticate_body(b"", 0, code, message)
        return Answer(body, close=True, failed=failed, reason=reason)


def _authenticate_body(
    challenge: bytes, lifetime_ms: int, code: ErrorCode = ErrorCode.none,
    message: str | None = None,
) -> SaslAuthenticateResponse:  # fmt: skip
    return SaslAuthenticateResponse(
        error_code=code,
        error_message=message,
        auth_bytes=challenge,
        session_lifetime=i64Timedelta.parse(datetime.timedelta(milliseconds=lifetime_ms)),
    )


def no_exchange(api_key: int) -> Body:
    """The answer to SaslHandshake or SaslAuthenticate where no SASL exchange is
    expected (a listener without SASL, or after the exchange): Kafka's
    ILLEGAL_SASL_STATE, the connection kept."""
    if api_key == ApiKey.SASL_HANDSHAKE:
        return SaslHandshakeResponse(error_code=ErrorCode.illegal_sasl_state, mechanisms=())
    return _authenticate_body(
        b"", 0, ErrorCode.illegal_sasl_state, "no SASL exchange on this connection"
    )
