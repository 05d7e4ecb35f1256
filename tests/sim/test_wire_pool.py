"""The client's connection pool (kop/pulsar/wire/pool.py) closes a broker
connection nothing has used for `max_idle_s` (the Java client's
connectionMaxIdleSeconds), and never one a producer, reader or request is on:
kop looks up every partition's topic, and each broker it ever met would
otherwise keep a channel and a keep-alive for it until kop stops."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kop.pulsar.wire import pool as pool_module
from kop.pulsar.wire.pool import ConnectionPool
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from tests.sim.clock import SimLoop
from tests.sim.wire_broker import SimBroker, SimConnection

URL = "pulsar://sim-broker:6650"
IDLE_S = 180.0


class _Handler:
    def on_receipt(self, receipt: pb.CommandSendReceipt) -> None: ...
    def on_send_error(self, error: pb.CommandSendError) -> None: ...
    def on_closed_by_broker(self) -> None: ...
    def on_connection_closed(self, connection: Any) -> None: ...
    def on_writable(self) -> None: ...


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> SimBroker:
    broker = SimBroker()

    async def open_sim(*args: Any, **kwargs: Any) -> SimConnection:
        conn = SimConnection(broker, len(broker.connections), broker.operation_timeout_s)
        broker.connections.append(conn)
        return conn

    monkeypatch.setattr(pool_module.Connection, "open", open_sim)
    return broker


def _pool() -> ConnectionPool:
    return ConnectionPool(operation_timeout_s=10, keepalive_s=30, max_idle_s=IDLE_S)


async def _closed_after(conn: SimConnection, within: float) -> float:
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not conn.is_closed:
        assert loop.time() - started <= within, "still open"
        await asyncio.sleep(1)
    return loop.time() - started


def test_an_idle_connection_is_closed_and_the_next_use_opens_another(
    loop: SimLoop, broker: SimBroker
) -> None:
    async def scenario() -> None:
        pool = _pool()
        conn = await pool.get(URL)
        took = await _closed_after(conn, 2 * IDLE_S)  # type: ignore[arg-type]
        assert IDLE_S <= took <= IDLE_S * 1.5
        again = await pool.get(URL)
        assert again is not conn and not again.is_closed
        pool.close()

    loop.run(scenario(), within=1000)


def test_a_connection_in_use_is_kept_and_closed_once_left_idle(
    loop: SimLoop, broker: SimBroker
) -> None:
    async def scenario() -> None:
        pool = _pool()
        conn = await pool.get(URL)
        handler = _Handler()
        conn.register_producer(1, handler)  # type: ignore[arg-type]
        await asyncio.sleep(5 * IDLE_S)
        assert not conn.is_closed
        conn.unregister_producer(1, handler)  # type: ignore[arg-type]
        took = await _closed_after(conn, 2 * IDLE_S)  # type: ignore[arg-type]
        assert IDLE_S <= took <= IDLE_S * 1.5
        pool.close()

    loop.run(scenario(), within=3000)


def test_taking_a_connection_from_the_pool_starts_its_idle_time_again(
    loop: SimLoop, broker: SimBroker
) -> None:
    async def scenario() -> None:
        pool = _pool()
        conn = await pool.get(URL)
        for _ in range(5):  # a lookup now and then: no producer, but used
            await asyncio.sleep(IDLE_S * 0.6)
            assert await pool.get(URL) is conn
        assert not conn.is_closed
        pool.close()

    loop.run(scenario(), within=3000)
