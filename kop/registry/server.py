"""The Schema Registry's HTTP listener: its own port (8081 by default, where Confluent's
clients look), its own aiohttp runner, stopped with kop. At most `max_connections`
connections are open at once: one more is closed as soon as it is accepted (the Kafka
listener's `max_connections` rule, for a client that opens connections and holds them)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable

from aiohttp import web

from kop.registry.askers import Askers
from kop.registry.protobuf.compiler import COMPILER
from kop.registry.routes import registry_app
from kop.registry.service import Registry


class _Refused(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


def _capped(server: web.Server, limit: int) -> Callable[[], asyncio.BaseProtocol]:
    def make() -> asyncio.BaseProtocol:
        if len(server.connections) >= limit:
            return _Refused()
        return server()

    return make


class RegistryServer:
    def __init__(self, registry: Registry, askers: Askers, max_connections: int = 1000) -> None:
        self._app = registry_app(registry, askers)
        self._max_connections = max_connections
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int, tls: ssl.SSLContext | None = None) -> None:
        self._runner = web.AppRunner(self._app, access_log=None)
        await self._runner.setup()
        assert self._runner.server is not None
        factory = _capped(self._runner.server, self._max_connections)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(factory, host, port, ssl=tls)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        COMPILER.close()  # its worker process ends with the registry
