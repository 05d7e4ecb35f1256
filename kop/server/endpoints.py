"""Kafka's `listeners` / `advertised.listeners` notation: `PROTOCOL://host:port`, one
listener per security protocol (the protocol is the listener's name)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class SecurityProtocol(enum.Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


@dataclass(frozen=True, slots=True)
class Endpoint:
    protocol: SecurityProtocol
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.protocol.value}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Listener:
    """Where one listener binds and what clients are told to connect to."""

    bind: Endpoint
    advertised: Endpoint

    @property
    def protocol(self) -> SecurityProtocol:
        return self.bind.protocol


class EndpointError(ValueError):
    pass


def parse_endpoints(text: str) -> list[Endpoint]:
    """`SASL_SSL://0.0.0.0:9093,PLAINTEXT://:9092` -> endpoints; an empty host means
    every interface (as in Kafka)."""
    found: list[Endpoint] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        scheme, sep, rest = item.partition("://")
        try:
            protocol = SecurityProtocol(scheme.upper())
        except ValueError:
            names = ", ".join(p.value for p in SecurityProtocol)
            raise EndpointError(f"{item!r}: protocol is not one of {names}") from None
        host, colon, port_text = rest.rpartition(":")
        if not sep or not colon or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise EndpointError(f"{item!r} is not PROTOCOL://host:port")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if any(e.protocol is protocol for e in found):
            raise EndpointError(f"{protocol.value} is named twice: one listener per protocol")
        found.append(Endpoint(protocol, host, int(port_text)))
    return found


def plan_listeners(
    listeners: list[Endpoint], advertised: list[Endpoint], advertised_host: str
) -> list[Listener]:
    """Pair each listener with what is advertised for it: the advertised endpoint of the
    same protocol, else its own host (or `advertised_host` for an any-interface bind)
    and port."""
    by_protocol = {e.protocol: e for e in advertised}
    extra = set(by_protocol) - {e.protocol for e in listeners}
    if extra:
        names = ", ".join(sorted(p.value for p in extra))
        raise EndpointError(f"advertised_listeners names {names}, which no listener serves")
    plan = []
    for bind in listeners:
        shown = by_protocol.get(bind.protocol)
        if shown is None:
            host = bind.host if bind.host not in ("", "0.0.0.0", "::") else advertised_host
            shown = Endpoint(bind.protocol, host, bind.port)
        plan.append(Listener(bind, shown))
    return plan
