"""The authenticated identity of a connection and the namespace it selects."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kop.security.errors import AuthenticationFailed
from kop.storage.naming import Namespace

# Pulsar's tenant and namespace names (NamedEntity): letters, digits, `-_=:.`.
_NAME = re.compile(r"^[-=:.a-zA-Z0-9_]{1,128}$")


@dataclass(frozen=True, slots=True)
class Principal:
    """`role` is what Pulsar's permissions are checked against (a token's role claim,
    a SCRAM user, a certificate's subject); `namespace` is where its Kafka topic
    names resolve; `expires_at` (epoch seconds, None: never) ends the session."""

    role: str
    namespace: Namespace
    mechanism: str
    expires_at: float | None = None
    instance: str = ""  # the kop instance a connection proved to be (sasl.peers)

    @property
    def kafka_name(self) -> str:
        """As Kafka's ACLs and tools name a principal."""
        return f"User:{self.role}"


def select_namespace(
    selector: str, default: Namespace, reserved: Namespace | None = None
) -> Namespace:
    """`tenant/namespace`, or `tenant` (with the default namespace's name), or empty
    (the defaults): what a SASL username says about where the client works. Never
    `reserved` (kop's system namespace: no client works there)."""
    if not selector:
        return default
    parts = selector.split("/")
    if len(parts) > 2 or not all(_NAME.match(p) and p not in (".", "..") for p in parts):
        raise AuthenticationFailed(f"{selector!r} is not tenant or tenant/namespace")
    chosen = Namespace(parts[0], parts[1] if len(parts) == 2 else default.namespace)
    if chosen == reserved:
        raise AuthenticationFailed(f"{selector!r} is not a namespace clients may work in")
    return chosen


def peer_role(peercert: object) -> str | None:
    """The role a client certificate names, as Pulsar's TLS authentication takes it:
    the subject's common name."""
    if not isinstance(peercert, dict):
        return None
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName" and value:
                return str(value)
    return None
