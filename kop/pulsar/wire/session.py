"""What producers and readers share inside one client: the connection pool, the
service URL, the timeouts and the id counter."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import OperationTimeoutError, PulsarWireError
from kop.pulsar.wire.lookup import lookup
from kop.pulsar.wire.options import ConnectOptions
from kop.pulsar.wire.pool import ConnectionPool
from kop.pulsar.wire.retry import Backoff
from kop.pulsar.wire.service_url import ServiceUrl

log = logging.getLogger(__name__)
R = TypeVar("R")


class Closable(Protocol):
    async def close(self) -> None: ...


class Session:
    def __init__(
        self,
        service_url: str,
        *,
        operation_timeout_s: float,
        keepalive_s: float,
        options: ConnectOptions | None = None,
        connection_max_idle_s: float = 180.0,
    ) -> None:
        self.service = ServiceUrl.parse(service_url)
        self.service_url = service_url
        self.operation_timeout_s = operation_timeout_s
        self.pool = ConnectionPool(
            operation_timeout_s=operation_timeout_s,
            keepalive_s=keepalive_s,
            max_idle_s=connection_max_idle_s,
            options=options,
        )
        self._ids = itertools.count()
        self.open: set[Closable] = set()  # producers and readers, for the client's close

    def track(self, resource: Closable) -> None:
        self.open.add(resource)

    def forget(self, resource: Closable) -> None:
        self.open.discard(resource)

    def new_id(self) -> int:
        """Producer and consumer ids, unique within the client (so across connections)."""
        return next(self._ids)

    async def connect_topic(self, topic: str) -> Connection:
        """The connection to the broker that owns `topic` now (one attempt)."""
        address = await lookup(self.pool, self.service, topic)
        return await self.pool.get(address.logical_url, address.physical_url)

    async def within_timeout(self, what: str, attempt: Callable[[], Awaitable[R]]) -> R:
        """`attempt()` again after each retriable failure, with backoff, until it
        succeeds or the operation timeout is spent; then the last error, retriable.
        Each attempt is cut at the deadline: one lookup with its redirects, a connect
        and a request can each take a timeout of their own."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.operation_timeout_s
        backoff = Backoff()
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    return await attempt()
            except TimeoutError as exc:  # the attempt was cut (it cleans up on cancel)
                raise OperationTimeoutError(
                    f"{what}: not done in {self.operation_timeout_s}s"
                ) from exc
            except PulsarWireError as exc:
                if not exc.retriable:
                    raise
                delay = backoff.next()
                if loop.time() + delay >= deadline:
                    raise OperationTimeoutError(
                        f"{what}: not done in {self.operation_timeout_s}s; last error: {exc}"
                    ) from exc
                log.debug("%s: %s; retrying in %.2fs", what, exc, delay)
                await asyncio.sleep(delay)
