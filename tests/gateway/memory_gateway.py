"""The whole gateway over the in-memory storage, for tests that drive kop through
sockets where a fault must be injected; and waiting for a condition with a
deadline (never a bare sleep)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from kop.config.settings import KopConfig
from kop.storage.naming import Namespace, PulsarTopic
from kop.wiring.app import Gateway
from tests.sim.memory_admin import MemoryBackend

# What several in-process instances share to prove to each other they are kop's.
CLUSTER_SECRET = "unit-tests-cluster-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def gateway_with_hot_topic(
    partitions: int, **config: Any
) -> AsyncIterator[tuple[Gateway, MemoryBackend]]:
    """A started gateway on free ports, with a topic "hot" of `partitions`; no admin
    HTTP unless `admin_port` is given (the default port may be taken by a kop running
    on this machine)."""
    config.setdefault("admin_port", 0)
    backend = MemoryBackend()
    gateway = Gateway(KopConfig(listen_host="127.0.0.1", port=free_port(), **config), backend)
    await gateway.start()
    topic = PulsarTopic(Namespace("public", "default"), "hot", "hot")
    await backend.admin.create_partitioned(topic, partitions, {})
    try:
        yield gateway, backend
    finally:
        await gateway.stop()


async def until(condition: Callable[[], bool], within: float) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)
