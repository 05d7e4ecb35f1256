"""Pulsar service URLs as Pulsar's clients take them: one scheme, one or more hosts
(`pulsar://b1:6650,b2:6650`, `pulsar+ssl://proxy:6651`), each tried in turn."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

SCHEMES = {"pulsar": 6650, "pulsar+ssl": 6651, "http": 8080, "https": 8443}
_TLS_SCHEMES = frozenset({"pulsar+ssl", "https"})


class ServiceUrlError(ValueError):
    """A URL no Pulsar client could use; the message says which part is wrong."""


@dataclass(frozen=True, slots=True)
class HostPort:
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class ServiceUrl:
    """`next_url()` rotates through the hosts, as the Java client's service name
    resolver does, so that a dead first host does not stop every attempt."""

    scheme: str
    hosts: tuple[HostPort, ...]
    _turn: itertools.count[int] = field(default_factory=itertools.count, compare=False)

    @classmethod
    def parse(cls, url: str, schemes: tuple[str, ...] = ("pulsar", "pulsar+ssl")) -> ServiceUrl:
        scheme, sep, rest = url.strip().partition("://")
        if not sep or scheme not in schemes:
            wanted = " or ".join(f"{s}://" for s in schemes)
            raise ServiceUrlError(f"{url!r}: want {wanted}host:port[,host:port...]")
        authority = rest.split("/", 1)[0]
        if not authority:
            raise ServiceUrlError(f"{url!r}: no host")
        hosts = tuple(_host_port(part, SCHEMES[scheme], url) for part in authority.split(","))
        return cls(scheme, hosts)

    @property
    def tls(self) -> bool:
        return self.scheme in _TLS_SCHEMES

    def url_of(self, host: HostPort) -> str:
        return f"{self.scheme}://{host}"

    def next_url(self) -> str:
        """One host's URL; the next call gives the next host."""
        return self.url_of(self.hosts[next(self._turn) % len(self.hosts)])

    def __str__(self) -> str:
        return f"{self.scheme}://{','.join(str(h) for h in self.hosts)}"


def _host_port(part: str, default_port: int, url: str) -> HostPort:
    part = part.strip()
    if part.startswith("["):  # [v6]:port
        host, _, tail = part[1:].partition("]")
        port_text = tail.removeprefix(":")
    else:
        host, _, port_text = part.rpartition(":") if ":" in part else (part, "", "")
    if not host:
        raise ServiceUrlError(f"{url!r}: empty host in {part!r}")
    if not port_text:
        return HostPort(host, default_port)
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ServiceUrlError(f"{url!r}: bad port {port_text!r} in {part!r}")
    return HostPort(host, int(port_text))


def single_host(url: str) -> HostPort:
    """The host and port of a broker URL a lookup named (always one host)."""
    parsed = ServiceUrl.parse(url)
    if len(parsed.hosts) != 1:
        raise ServiceUrlError(f"{url!r}: a broker URL names one host")
    return parsed.hosts[0]
