"""One connection per broker, shared by all producers and readers of a client."""

from __future__ import annotations

import asyncio

from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import ConnectionClosedError, PulsarWireError
from kop.pulsar.wire.options import ConnectOptions
from kop.pulsar.wire.service_url import ServiceUrl, ServiceUrlError, single_host


class ConnectionPool:
    """Connections keyed by (logical broker URL, physical URL): they differ when the
    broker is reached through a proxy at the service URL (`proxy_through_service_url`),
    and then CONNECT names the broker (`host:port`) the proxy should forward to."""

    def __init__(
        self,
        *,
        operation_timeout_s: float,
        keepalive_s: float,
        options: ConnectOptions | None = None,
    ) -> None:
        self._timeout = operation_timeout_s
        self._keepalive = keepalive_s
        self.options = options or ConnectOptions()
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
        try:
            target = single_host(physical)
            tls = ServiceUrl.parse(physical).tls
            proxy_to = str(single_host(logical)) if logical != physical else None
        except ServiceUrlError as exc:
            raise PulsarWireError(f"unusable broker URL: {exc}", retriable=False) from exc
        conn = await Connection.open(
            target.host,
            target.port,
            proxy_to_broker_url=proxy_to,
            operation_timeout_s=self._timeout,
            keepalive_s=self._keepalive,
            ssl_context=self.options.ssl_context() if tls else None,
            auth=self.options.auth,
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
