"""The Kafka listener: accepts sockets and runs a Connection for each.

Past `max_connections` open connections, the newest is closed as soon as it is
accepted (as Kafka does past `max.connections.per.ip`): the connections already
served keep their service, and the refused client retries with its backoff.
"""

from __future__ import annotations

import asyncio
import logging
import resource

from kop.api.context import Namespace, Services
from kop.server.closing import MAX_CONNECTIONS, ThrottledLog
from kop.server.connection import Connection, Limits, RequestObserver
from kop.server.memory import AnswerMemory, RequestMemory
from kop.server.stream import RequestStream

log = logging.getLogger(__name__)
_closes = ThrottledLog(log)

# A connection reads ahead up to this much of frames not yet taken (past the one
# being received) before it stops reading its socket: small frames cost the shared
# budget nothing, so this is what a connection may hold of them.
_READ_AHEAD = 64 * 1024
# File descriptors kop needs besides its Kafka connections (Pulsar, admin HTTP, files).
_OTHER_FILES = 1024


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
        self.requests = RequestMemory(limits.max_queued_request_bytes)
        self.answers = AnswerMemory(limits.max_queued_response_bytes)
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], Connection] = {}

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    async def start(self, host: str, port: int) -> None:
        _raise_file_limit(self._limits.max_connections + _OTHER_FILES)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._stream, host, port, reuse_address=True)
        log.info("serving Kafka on %s:%d", host, port)

    def _stream(self) -> asyncio.BaseProtocol:
        if len(self._connections) >= self._limits.max_connections:
            self._observer.connection_closed(MAX_CONNECTIONS)
            return _Refused(self._limits.max_connections)
        limits = self._limits
        stream = RequestStream(
            limits.max_request_bytes,
            _READ_AHEAD,
            self.requests,
            limits.request_receive_timeout_s,
            limits.response_send_timeout_s,
        )
        conn = Connection(
            stream,
            stream,
            self._services,
            self._namespace,
            limits,
            self._observer,
            self.answers,
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
                self._connections[task].abort()  # a close would wait for its client
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=5.0)


class _Refused(asyncio.Protocol):
    """A connection past `max_connections`: closed once accepted."""

    def __init__(self, limit: int) -> None:
        self._limit = limit

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        transport.close()
        _closes(
            logging.WARNING,
            MAX_CONNECTIONS,
            "closing new connection from %s: %d connections open (max_connections)",
            peer,
            self._limit,
        )


def _raise_file_limit(wanted: int) -> None:
    """Every connection is a file descriptor: the soft limit (often 1024) is raised
    towards the hard one, as Go's runtime does at start."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if new > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    if new < wanted:
        log.warning(
            "open files limited to %d: fewer than max_connections + %d; raise `ulimit -n`",
            new,
            _OTHER_FILES,
        )
