"""The authenticated identity of a connection and the namespace it selects."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kop.security.errors import AuthenticationFailed
from kop.storage.naming import Namespace

# Pulsar's tenant and namespace names (NamedEntity): letters, digits, `-_=:.`.
_NAME = re.compile(r"^[-=:.\w]{1,128}$")


@dataclass(frozen=True, slots=True)
class Principal:
    """`role` is what Pulsar's permissions are checked against (a token's role claim,
    a SCRAM user, a certificate's subject); `namespace` is where its Kafka topic
    names resolve; `expires_at` (epoch seconds, None: never) ends the session."""

    role: str
    namespace: Namespace
    mechanism: str
    expires_at: float | None = None

    @property
    def kafka_name(self) -> str:
        """As Kafka's ACLs and tools name a principal."""
        return f"User:{self.role}"


def select_namespace(selector: str, default: Namespace) -> Namespace:
    """`tenant/namespace`, or `tenant` (with the default namespace's name), or empty
    (the defaults): what a SASL username says about where the client works."""
    if not selector:
        return default
    parts = selector.split("/")
    if len(parts) > 2 or not all(_NAME.match(p) for p in parts):
        raise AuthenticationFailed(f"{selector!r} is not tenant or tenant/namespace")
    if len(parts) == 1:
        return Namespace(parts[0], default.namespace)
    return Namespace(parts[0], parts[1])
