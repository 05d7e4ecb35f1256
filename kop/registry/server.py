"""The Schema Registry's HTTP listener: its own port (8081 by default, where Confluent's
clients look), its own aiohttp runner, stopped with kop."""

from __future__ import annotations

import ssl

from aiohttp import web

from kop.registry.askers import Askers
from kop.registry.routes import registry_app
from kop.registry.service import Registry


class RegistryServer:
    def __init__(self, registry: Registry, askers: Askers) -> None:
        self._app = registry_app(registry, askers)
        self._runner: web.AppRunner | None = None

    async def start(self, host: str, port: int, tls: ssl.SSLContext | None = None) -> None:
        self._runner = web.AppRunner(self._app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port, ssl_context=tls).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
