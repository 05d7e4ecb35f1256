"""The Kafka listener: accepts sockets and runs a Connection for each."""

from __future__ import annotations

import asyncio
import logging

from kop.api.context import Namespace, Services
from kop.server.connection import Connection, Limits, RequestObserver

log = logging.getLogger(__name__)


# A connection reads ahead up to twice this before it stops reading its socket. The
# asyncio default (64 KiB) makes a 256 KiB produce request take several trips round
# the event loop; this keeps one trip per request and still bounds a connection.
_READ_BUFFER = 1 << 20


class KafkaListener:
    def __init__(
        self,
        services: Services,
        namespace: Namespace,
        limits: Limits,
        observer: RequestObserver,
    ) -> None:
        self._services = services
        self._namespace = namespace
        self._limits = limits
        self._observer = observer
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], Connection] = {}

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(
            self._accept, host, port, reuse_address=True, limit=_READ_BUFFER
        )
        log.info("serving Kafka on %s:%d", host, port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(
            reader, writer, self._services, self._namespace, self._limits, self._observer
        )
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = conn
        try:
            await conn.run()
        except asyncio.CancelledError:
            # Only stop() cancels a connection (past its grace period). Ending
            # quietly: asyncio's server would report a cancelled handler as an error.
            pass
        except Exception:
            log.exception("connection %s failed", conn.peer)
        finally:
            self._connections.pop(task, None)

    async def stop(self, grace_s: float = 10.0) -> None:
        """Stop accepting, let in-flight requests finish for up to `grace_s`, then close."""
        if self._server is not None:
            self._server.close()
        for conn in self._connections.values():
            conn.stop_reading()
        if self._connections:
            _done, pending = await asyncio.wait(list(self._connections), timeout=grace_s)
            for task in pending:
                log.warning("closing a connection whose requests did not finish in %.0fs", grace_s)
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=5.0)
