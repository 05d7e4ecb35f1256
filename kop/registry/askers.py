"""Who is asking the registry, as kop's Kafka listener decides it for PLAIN and
OAUTHBEARER: HTTP Basic with the username selecting `tenant[/namespace]` and the
password `token:<JWT>` (what confluent-kafka's `basic.auth.user.info` sends), or a
bearer token, whose `target-sr-cluster` header (confluent-kafka's required
`bearer.auth.logical.cluster`) selects the namespace. Without authorization every
asker may do everything, in the namespace its credentials select (else the default)."""

from __future__ import annotations

import base64
import binascii

from aiohttp import web

from kop.registry import errors
from kop.registry.access import Asker
from kop.security.authorizer import ALLOW_ALL, Authorizer
from kop.security.errors import AuthenticationFailed
from kop.security.principal import Principal, select_namespace
from kop.security.tokens import TokenValidator
from kop.storage.naming import Namespace

TOKEN_PREFIX = "token:"
LOGICAL_CLUSTER = "target-sr-cluster"


class Askers:
    def __init__(
        self, authorizer: Authorizer | None, tokens: TokenValidator | None,
        default: Namespace, reserved: Namespace,
    ) -> None:  # fmt: skip
        self._authorizer = authorizer
        self._tokens = tokens
        self._default = default
        self._reserved = reserved

    def asker(self, request: web.Request) -> Asker:
        """RegistryError 401 when credentials are needed and missing or refused."""
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        selector, token = "", ""
        if scheme.lower() == "basic":
            selector, token = _basic(value.strip())
        elif scheme.lower() == "bearer":
            selector, token = request.headers.get(LOGICAL_CLUSTER, ""), value.strip()
        try:
            ns = select_namespace(selector, self._default, self._reserved)
        except AuthenticationFailed as exc:
            raise errors.unauthorized(str(exc)) from None
        if self._authorizer is None:
            return Asker(ns, ALLOW_ALL)
        if not token:
            raise errors.unauthorized(
                "credentials are needed: Basic tenant[/namespace]:token:<JWT>, or Bearer <JWT>"
            )
        if self._tokens is None:
            raise errors.unauthorized("no token key is configured (auth_token_secret_key)")
        try:
            identity = self._tokens.validate(token)
        except AuthenticationFailed:
            raise errors.unauthorized("the token is not accepted") from None
        principal = Principal(identity.role, ns, "SCHEMA_REGISTRY", identity.expires_at)
        return Asker(ns, self._authorizer.bind(principal))


def _basic(value: str) -> tuple[str, str]:
    try:
        user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise errors.unauthorized("malformed Basic credentials") from None
    return user, password.removeprefix(TOKEN_PREFIX)
