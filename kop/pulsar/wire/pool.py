"""One connection per broker, shared by all producers and readers of a client."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import ConnectionClosedError, PulsarWireError


def parse_service_url(url: str) -> tuple[str, int]:
    """(host, port) of a `pulsar://host:port` URL (the only scheme supported)."""
    parts = urlsplit(url)
    if parts.scheme != "pulsar" or not parts.hostname:
        raise PulsarWireError(f"unsupported Pulsar URL {url!r} (want pulsar://host:port)", False)
    return parts.hostname, parts.port or 6650


class ConnectionPool:
    """Connections keyed by (logical broker URL, physical URL): they differ when the
    broker is reached through a proxy at the service URL (`proxy_through_service_url`),
    and then CONNECT names the broker the proxy should forward to."""

    def __init__(self, *, operation_timeout_s: float, keepalive_s: float) -> None:
        self._timeout = operation_timeout_s
        self._keepalive = keepalive_s
        self._connections: dict[tuple[str, str], Connection] = {}
        self._opening: dict[tuple[str, str], asyncio.Future[Connection]] = {}
        self._closed = False

    async def get(self, logical_url: str, physical_url: str | None = None) -> Connection:
        physical = physical_url or logical_url
        key = (logical_url, physical)
        conn = self._connections.get(key)
        if conn is not None and not conn.is_closed:
            return conn
        if self._closed:
            raise ConnectionClosedError("client closed")
        opening = self._opening.get(key)
        if opening is None:
            opening = asyncio.ensure_future(self._open(key))
            self._opening[key] = opening
            opening.add_done_callback(lambda _: self._opening.pop(key, None))
        return await asyncio.shield(opening)

    async def _open(self, key: tuple[str, str]) -> Connection:
        logical, physical = key
        host, port = parse_service_url(physical)
        conn = await Connection.open(
            host,
            port,
            proxy_to_broker_url=logical if logical != physical else None,
            operation_timeout_s=self._timeout,
            keepalive_s=self._keepalive,
        )
        if self._closed:
            conn.close()
            raise ConnectionClosedError("client closed")
        self._connections[key] = conn
        conn.add_close_callback(lambda c: self._forget(key, c))
        return conn

    def _forget(self, key: tuple[str, str], conn: Connection) -> None:
        if self._connections.get(key) is conn:
            del self._connections[key]

    def close(self) -> None:
        self._closed = True
        for conn in list(self._connections.values()):
            conn.close()
        self._connections.clear()
