"""One connection per broker, shared by all producers and readers of a client, and
closed once nothing has used it for a while (the Java client's
`connectionMaxIdleSeconds`): a client that looked up many topics, or whose topics
moved to other brokers, would otherwise keep a connection to every broker it ever
met, each costing the broker a channel and a keep-alive."""

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
        max_idle_s: float = 180.0,
        options: ConnectOptions | None = None,
    ) -> None:
        self._timeout = operation_timeout_s
        self._keepalive = keepalive_s
        self._max_idle = max_idle_s  # 0: never closed for idleness
        self.options = options or ConnectOptions()
        self._connections: dict[tuple[str, str], Connection] = {}
        self._idle_since: dict[Connection, float] = {}
        self._sweeping: asyncio.TimerHandle | None = None
        self._opening: dict[tuple[str, str], asyncio.Future[Connection]] = {}
        self._closed = False

    async def get(self, logical_url: str, physical_url: str | None = None) -> Connection:
        physical = physical_url or logical_url
        key = (logical_url, physical)
        conn = self._connections.get(key)
        if conn is not None and not conn.is_closed:
            self._idle_since.pop(conn, None)  # in use again
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
        if self._max_idle > 0 and self._sweeping is None:
            self._sweeping = asyncio.get_running_loop().call_later(self._sweep_s, self._sweep)
        return conn

    def _forget(self, key: tuple[str, str], conn: Connection) -> None:
        if self._connections.get(key) is conn:
            del self._connections[key]
        self._idle_since.pop(conn, None)

    @property
    def _sweep_s(self) -> float:
        return self._max_idle / 4

    def _sweep(self) -> None:
        """Closes the connections found idle (no producer, consumer or request) at
        every sweep for `max_idle_s`; taking one from the pool resets its count."""
        self._sweeping = None
        now = asyncio.get_running_loop().time()
        for conn in list(self._connections.values()):
            if not conn.is_idle:
                self._idle_since.pop(conn, None)
            elif now - self._idle_since.setdefault(conn, now) >= self._max_idle:
                conn.close(f"idle for {self._max_idle:g}s")
        if self._connections and not self._closed:
            self._sweeping = asyncio.get_running_loop().call_later(self._sweep_s, self._sweep)

    def close(self) -> None:
        self._closed = True
        if self._sweeping is not None:
            self._sweeping.cancel()
            self._sweeping = None
        for conn in list(self._connections.values()):
            conn.close()
        self._connections.clear()
