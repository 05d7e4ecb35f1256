"""The Kafka listeners: accept sockets and run a Connection for each.

One server per configured listener (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL),
each with its own TLS context and SASL rules; the connection limit and the
memory budgets are shared by all of them.

Past `max_connections` open connections, the newest is closed as soon as it is
accepted (as Kafka does past `max.connections.per.ip`): the connections already
served keep their service, and the refused client retries with its backoff. So is
one whose address holds its share already, or opens connections too fast
(kop.server.addresses): a host cannot take every connection from the others.
Those are decided when the socket is attached, once the client's address is known
(on a TLS listener, after the handshake; the handshake must end within
`connection_setup_timeout_s`, and is counted against `max_connections` meanwhile).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import ssl
from dataclasses import dataclass

from kop.api.context import Namespace, Services
from kop.sasl.gatekeeper import Gatekeeper, ListenerSecurity
from kop.server.addresses import (
    AddressLimits,
    canonical,
    is_address,
    parse_overrides,
    with_resolved,
)
from kop.server.closing import MAX_CONNECTIONS, MAX_CONNECTIONS_PER_IP, ThrottledLog
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


@dataclass(frozen=True, slots=True)
class Bind:
    """One socket to serve: where, with which TLS context, under which rules."""

    host: str
    port: int
    security: ListenerSecurity
    tls: ssl.SSLContext | None = None


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
        self._servers: dict[str, asyncio.Server] = {}
        self._connections: dict[asyncio.Task[None], Connection] = {}
        self._addresses = AddressLimits(
            limits.max_connections_per_ip, {}, limits.max_connection_creation_rate_per_ip
        )  # with the overrides once `serve` resolved their names
        self._admitted: dict[asyncio.Task[None], str] = {}  # the address each counts for

    @property
    def port(self) -> int:
        """The first listener's port."""
        return next(iter(self.ports.values()))

    @property
    def ports(self) -> dict[str, int]:
        """Each listener's bound port, by name."""
        return {
            name: int(server.sockets[0].getsockname()[1]) for name, server in self._servers.items()
        }

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    async def start(self, host: str, port: int) -> None:
        """One PLAINTEXT listener in the listener's namespace."""
        await self.serve([Bind(host, port, ListenerSecurity("PLAINTEXT", self._namespace))])

    async def serve(self, endpoints: list[Bind]) -> None:
        _raise_file_limit(self._limits.max_connections + _OTHER_FILES)
        loop = asyncio.get_running_loop()
        limits = self._limits
        overrides = await _resolve(parse_overrides(limits.max_connections_per_ip_overrides))
        self._addresses = AddressLimits(
            limits.max_connections_per_ip, overrides, limits.max_connection_creation_rate_per_ip
        )
        for end in endpoints:
            name = end.security.name
            self._servers[name] = await loop.create_server(
                lambda end=end: self._stream(end.security),
                end.host or None,
                end.port,
                reuse_address=True,
                ssl=end.tls,
                # the same deadline as the Connection's: the socket goes with it
                ssl_handshake_timeout=limits.connection_setup_timeout_s if end.tls else None,
            )
            log.info("serving Kafka %s on %s:%d", name, end.host or "*", end.port)

    def _stream(self, security: ListenerSecurity) -> asyncio.BaseProtocol:
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
            Gatekeeper(security, stream.get_extra_info),
        )
        task = asyncio.create_task(self._serve(conn))
        self._connections[task] = conn
        stream.admit = lambda transport: self._admit(task, transport)
        return stream

    def _admit(self, task: asyncio.Task[None], transport: asyncio.BaseTransport) -> bool:
        """The client's address is known: within its limits it stays (and counts for
        that address until it ends), else it is closed now."""
        if task.done():  # its connection gave up waiting for the socket
            return False
        peer = transport.get_extra_info("peername")
        if not isinstance(peer, tuple) or not peer:
            return True  # not an IP socket: no address to count it for
        address = canonical(str(peer[0]))
        refused = self._addresses.admit(address)
        if refused is None:
            self._admitted[task] = address
            return True
        self._observer.connection_closed(refused)
        if refused == MAX_CONNECTIONS_PER_IP:
            why, value = (
                "connections open from it (max_connections_per_ip)",
                float(self._addresses.open_from(address)),
            )
        else:
            why = "connections a second at most (max_connection_creation_rate_per_ip)"
            value = self._limits.max_connection_creation_rate_per_ip
        _closes(logging.WARNING, refused, "closing new connection from %s: %g %s",
                address, value, why)  # fmt: skip
        return False

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
            address = self._admitted.pop(task, None)
            if address is not None:
                self._addresses.release(address)

    async def stop(self, grace_s: float = 10.0) -> None:
        """Stop accepting, let in-flight requests finish for up to `grace_s`, then close."""
        for server in self._servers.values():
            server.close()
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


async def _resolve(overrides: dict[str, int]) -> dict[str, int]:
    """The overrides by address: a host name stands for every address it resolves to
    now (as Kafka resolves them when it starts). One that does not resolve is logged
    and left out: its clients get the default cap, not a kop that cannot start."""
    loop = asyncio.get_running_loop()
    resolved: dict[str, list[str]] = {}
    for host in overrides:
        if not is_address(host):
            try:
                infos = await loop.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
            except OSError as exc:
                log.error(
                    "max_connections_per_ip_overrides: %s does not resolve (%s); "
                    "its clients get max_connections_per_ip",
                    host,
                    exc,
                )
                resolved[host] = []
                continue
            resolved[host] = sorted({str(info[4][0]) for info in infos})
    return with_resolved(overrides, resolved)


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
