"""Kafka's `listeners` / `advertised.listeners` notation: `NAME://host:port`, where a
listener's name is its security protocol, or a name of the operator's that
`listener.security.protocol.map` gives one (`INTERNAL:SASL_SSL,EXTERNAL:SASL_SSL`), so
two listeners may share a protocol: one for clients inside a cluster, one for those
outside, each told the addresses of its own listener."""

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
    name: str = ""  # the listener's name; empty: its protocol's

    @property
    def listener(self) -> str:
        """The listener's name, as Metadata and the instances' heartbeats key it."""
        return self.name or self.protocol.value

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Listener:
    """Where one listener binds and what clients are told to connect to."""

    bind: Endpoint
    advertised: Endpoint

    @property
    def protocol(self) -> SecurityProtocol:
        return self.bind.protocol

    @property
    def name(self) -> str:
        return self.bind.listener


class EndpointError(ValueError):
    pass


def parse_protocol_map(text: str) -> dict[str, SecurityProtocol]:
    """`INTERNAL:SASL_SSL,EXTERNAL:SSL` -> {name: protocol}; a name that is a protocol
    means that protocol unless the map says otherwise (Kafka's default map)."""
    found: dict[str, SecurityProtocol] = {p.value: p for p in SecurityProtocol}
    named: set[str] = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = (x.strip().upper() for x in item.partition(":"))
        if not sep or not name.replace("_", "").isalnum():
            raise EndpointError(f"{item!r} is not NAME:PROTOCOL")
        if name in named:
            raise EndpointError(f"listener {name} is mapped twice")
        try:
            found[name] = SecurityProtocol(value)
        except ValueError:
            names = ", ".join(p.value for p in SecurityProtocol)
            raise EndpointError(f"{item!r}: protocol is not one of {names}") from None
        named.add(name)
    return found


def parse_endpoints(
    text: str, protocols: dict[str, SecurityProtocol] | None = None
) -> list[Endpoint]:
    """`SASL_SSL://0.0.0.0:9093,INTERNAL://:9092` -> endpoints, each listener name once
    (`protocols`: parse_protocol_map's); an empty host means every interface (as in
    Kafka)."""
    protocols = protocols if protocols is not None else parse_protocol_map("")
    found: list[Endpoint] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        scheme, sep, rest = item.partition("://")
        name = scheme.strip().upper()
        protocol = protocols.get(name)
        if protocol is None:
            raise EndpointError(
                f"{item!r}: listener {name or '?'} is not a security protocol and "
                "listener_security_protocol_map does not name it"
            )
        host, colon, port_text = rest.rpartition(":")
        if not sep or not colon or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise EndpointError(f"{item!r} is not NAME://host:port")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if any(e.listener == name for e in found):
            raise EndpointError(f"{name} is named twice: each listener once")
        found.append(
            Endpoint(protocol, host, int(port_text), "" if name == protocol.value else name)
        )
    return found


def plan_listeners(
    listeners: list[Endpoint], advertised: list[Endpoint], advertised_host: str
) -> list[Listener]:
    """Pair each listener with what is advertised for it: the advertised endpoint of the
    same name, else its own host (or `advertised_host` for an any-interface bind)
    and port."""
    by_name = {e.listener: e for e in advertised}
    extra = set(by_name) - {e.listener for e in listeners}
    if extra:
        names = ", ".join(sorted(extra))
        raise EndpointError(f"advertised_listeners names {names}, which no listener serves")
    plan = []
    for bind in listeners:
        shown = by_name.get(bind.listener)
        if shown is None:
            host = bind.host if bind.host not in ("", "0.0.0.0", "::") else advertised_host
            shown = Endpoint(bind.protocol, host, bind.port, bind.name)
        plan.append(Listener(bind, shown))
    return plan
