"""Fairness between client addresses: how many connections one address may hold
(Kafka's `max.connections.per.ip` and `max.connections.per.ip.overrides`), and how
fast it may open them (KIP-612's per-IP `connection_creation_rate` quota).

Without them one host could take every one of `max_connections` (silent sockets
cost it nothing) and refuse every other tenant. A connection over either limit is
closed as soon as it is accepted, as Kafka closes it.

The rate is a token bucket per address holding RATE_WINDOW_S seconds' worth of
connections: like Kafka's quotas (averaged over a window of samples), a host may open
a burst at start, then `rate` a second. Every attempt takes a token, those the
connection cap then refuses too (Kafka records the rate first). A bucket left alone
long enough to refill (RATE_WINDOW_S) is what no bucket means, so it is dropped: the
buckets held are those of addresses seen within the window, and at most MAX_TRACKED
of them (the oldest go first: a bound, not a refusal) whatever a flood of addresses
does.
"""

from __future__ import annotations

import collections
import ipaddress
import time
from collections.abc import Callable, Iterable, Mapping

from kop.server.closing import CONNECTION_RATE, MAX_CONNECTIONS_PER_IP

# A host may open this many seconds' worth of `rate` at once.
RATE_WINDOW_S = 10.0
# Buckets held at most (about 150 bytes each).
MAX_TRACKED = 65_536


class OverridesError(ValueError):
    pass


def parse_overrides(text: str) -> dict[str, int]:
    """Kafka's `host:count,host:count` (an IP or a name; IPv6 as `::1:5` or
    `[::1]:5`, the count after the last colon) -> {host: count}."""
    found: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, colon, count = item.rpartition(":")
        host = host.strip()
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        count = count.strip()
        if not colon or not host or not count.isdigit():
            raise OverridesError(f"{item!r} is not host:count")
        if host in found:
            raise OverridesError(f"{host} is named twice")
        found[host] = int(count)
    return found


def is_address(host: str) -> bool:
    """An IP address, not a name."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def canonical(address: str) -> str:
    """One spelling per address: IPv4 seen through a dual-stack socket
    (`::ffff:10.0.0.1`) is that IPv4 address; names and the unparsable stay as given."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


class AddressLimits:
    """Admits or refuses each new connection by its address; `release` when an
    admitted one ends."""

    def __init__(
        self,
        per_address: int,
        overrides: Mapping[str, int],
        rate: float,
        clock: Callable[[], float] = time.monotonic,
        max_tracked: int = MAX_TRACKED,
    ) -> None:
        self._per_address = per_address
        self._overrides = {canonical(host): count for host, count in overrides.items()}
        self._rate = rate
        self._capacity = max(1.0, rate * RATE_WINDOW_S)
        self._full_after = self._capacity / rate  # an untouched bucket is full by then
        self._clock = clock
        self._max_tracked = max_tracked
        self._open: dict[str, int] = {}
        # address -> (tokens, when they were counted), oldest update first
        self._buckets: collections.OrderedDict[str, tuple[float, float]] = collections.OrderedDict()

    def cap(self, address: str) -> int:
        return self._overrides.get(canonical(address), self._per_address)

    def open_from(self, address: str) -> int:
        return self._open.get(canonical(address), 0)

    @property
    def tracked(self) -> int:
        """Addresses with a bucket (for tests and the curious)."""
        return len(self._buckets)

    def admit(self, address: str) -> str | None:
        """None when the connection may stay (it is then counted until `release`),
        else why it is refused: a `kop.server.closing` reason."""
        key = canonical(address)
        if not self._take_token(key):
            return CONNECTION_RATE
        count = self._open.get(key, 0)
        if count >= self._overrides.get(key, self._per_address):
            return MAX_CONNECTIONS_PER_IP
        self._open[key] = count + 1
        return None

    def release(self, address: str) -> None:
        key = canonical(address)
        count = self._open.get(key, 0) - 1
        if count > 0:
            self._open[key] = count
        else:
            self._open.pop(key, None)

    def _take_token(self, key: str) -> bool:
        now = self._clock()
        self._forget_full(now)
        tokens, then = self._buckets.pop(key, (self._capacity, now))
        tokens = min(self._capacity, tokens + (now - then) * self._rate)
        taken = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if taken else tokens, now)
        return taken

    def _forget_full(self, now: float) -> None:
        buckets = self._buckets
        while buckets:
            key, (_tokens, then) = next(iter(buckets.items()))
            if now - then < self._full_after and len(buckets) < self._max_tracked:
                return
            del buckets[key]


def with_resolved(
    overrides: Mapping[str, int], resolved: Mapping[str, Iterable[str]]
) -> dict[str, int]:
    """Overrides by address: each name's count given to every address it resolved to
    (`resolved`: name -> addresses; an IP literal stands for itself)."""
    out: dict[str, int] = {}
    for host, count in overrides.items():
        for address in resolved.get(host, (host,)):
            out[canonical(address)] = count
    return out
