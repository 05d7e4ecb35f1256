"""The Kafka listener: accepts sockets and runs a Connection for each."""

from __future__ import annotations

import asyncio
import logging

from kop.api.context import Namespace, Services
from kop.server.connection import Connection, Limits, RequestObserver
from kop.server.stream import RequestStream

log = logging.getLogger(__name__)


# A connection holds up to this much of requests not yet taken (past the one being
# received) before it stops reading its socket: a bound per connection.
_READ_AHEAD = 1 << 20


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
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._stream, host, port, reuse_address=True)
        log.info("serving Kafka on %s:%d", host, port)

    def _stream(self) -> RequestStream:
        stream = RequestStream(self._limits.max_request_bytes, _READ_AHEAD)
        conn = Connection(
            stream, stream, self._services, self._namespace, self._limits, self._observer
        )
        task = asyncio.create_task(self._serve(conn))
        self._connections[task] = conn
        return stream

    async def _serve(self, conn: Connection) -> None:
        task = asyncio.current_task()
        assert task is not None
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
