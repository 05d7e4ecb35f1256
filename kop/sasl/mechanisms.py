"""SASL mechanisms as small sans-IO state machines: client bytes in, server bytes out,
and a Principal once the exchange succeeds. Each instance serves one exchange."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kop.security.errors import AuthenticationFailed
from kop.security.principal import Principal, select_namespace
from kop.security.tokens import TokenValidator
from kop.storage.naming import Namespace

PLAIN = "PLAIN"
OAUTHBEARER = "OAUTHBEARER"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
MECHANISMS = (PLAIN, OAUTHBEARER, SCRAM_SHA_256, SCRAM_SHA_512)

# A PLAIN password that carries a token, as StreamNative's KoP and Pulsar's Kafka
# tooling write it.
TOKEN_PREFIX = "token:"


@dataclass(frozen=True, slots=True)
class Step:
    """What the server answers to one client message; `principal` ends the exchange."""

    challenge: bytes
    principal: Principal | None = None


class Mechanism(Protocol):
    name: str
    # A step may hash a password (PBKDF2): the gatekeeper runs it off the event loop
    # (kop.security.hashing).
    costly: bool

    def step(self, client: bytes) -> Step:
        """Raises AuthenticationFailed; the exchange is then over."""


# Passwords that are not tokens (SCRAM users' passwords given over PLAIN): user,
# password -> role, or AuthenticationFailed. None: only tokens are accepted.
PasswordCheck = Callable[[str, str], str]


class Plain:
    """RFC 4616: `authzid NUL authcid NUL passwd`. The username selects the tenant and
    namespace; the password is `token:<JWT>` (the role is the token's)."""

    name = PLAIN
    costly = False

    def __init__(
        self,
        tokens: TokenValidator | None,
        default: Namespace,
        passwords: PasswordCheck | None = None,
        reserved: Namespace | None = None,
    ) -> None:
        self._tokens = tokens
        self._default = default
        self._passwords = passwords
        self._reserved = reserved  # kop's system namespace: never selected
        self.costly = passwords is not None  # SCRAM users' passwords: PBKDF2

    def step(self, client: bytes) -> Step:
        try:
            authzid, user, password = client.decode("utf-8").split("\0")
        except (UnicodeDecodeError, ValueError):
            raise AuthenticationFailed(
                "PLAIN message is not authzid NUL user NUL password"
            ) from None
        if authzid and authzid != user:
            raise AuthenticationFailed("PLAIN authorization id differs from the username")
        if password.startswith(TOKEN_PREFIX):
            if self._tokens is None:
                raise AuthenticationFailed("token passwords are not accepted (no token key set)")
            ident = self._tokens.validate(password[len(TOKEN_PREFIX) :])
            namespace = select_namespace(user, self._default, self._reserved)
            return Step(b"", Principal(ident.role, namespace, PLAIN, ident.expires_at))
        if self._passwords is None or not user:
            raise AuthenticationFailed("PLAIN password is not token:<JWT>")
        role = self._passwords(user, password)
        return Step(b"", Principal(role, select_namespace("", self._default), PLAIN))


# RFC 7628: gs2-header, then key=value pairs each ended by ^A, then a final ^A.
_GS2 = re.compile(r"^n,(a=(?P<authzid>[^,]*))?,")
_EXTENSION_KEY = re.compile(r"^[A-Za-z]+$")
TENANT_EXTENSION = "tenant"


class OAuthBearer:
    """RFC 7628's client first message with `auth=Bearer <JWT>`. The extension
    `tenant` (`tenant` or `tenant/namespace`) selects where the client works."""

    name = OAUTHBEARER
    costly = False

    def __init__(
        self, tokens: TokenValidator, default: Namespace, reserved: Namespace | None = None
    ) -> None:
        self._tokens = tokens
        self._default = default
        self._reserved = reserved  # kop's system namespace: never selected

    def step(self, client: bytes) -> Step:
        try:
            text = client.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed("OAUTHBEARER message is not UTF-8") from None
        head = _GS2.match(text)
        if head is None or not text.endswith("\x01\x01"):
            raise AuthenticationFailed("OAUTHBEARER message is not an RFC 7628 client response")
        pairs: dict[str, str] = {}
        for item in text[head.end() :].split("\x01")[1:-2]:
            key, sep, value = item.partition("=")
            if not sep or key in pairs or (key != "auth" and not _EXTENSION_KEY.match(key)):
                raise AuthenticationFailed(f"OAUTHBEARER key/value {key!r} is malformed")
            pairs[key] = value
        scheme, _, token = pairs.get("auth", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise AuthenticationFailed("OAUTHBEARER message has no auth=Bearer <token>")
        ident = self._tokens.validate(token.strip())
        authzid = head.group("authzid")
        if authzid and authzid != ident.role:
            raise AuthenticationFailed("OAUTHBEARER authorization id differs from the token's role")
        namespace = select_namespace(pairs.get(TENANT_EXTENSION, ""), self._default, self._reserved)
        return Step(b"", Principal(ident.role, namespace, OAUTHBEARER, ident.expires_at))
