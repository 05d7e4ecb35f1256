"""`event_loop`: kop serves on uvloop by default, on asyncio's own loop when asked, and
falls back to asyncio's (with a warning) where uvloop is not installed."""

from __future__ import annotations

import asyncio
import logging
import struct
import sys
import threading

import pytest
import uvloop

from kop.cli import event_loop
from kop.config.settings import KopConfig
from kop.pulsar.wire.connection import Connection
from tests.gateway.memory_gateway import gateway_with_hot_topic
from tests.unit.scripted_broker import ScriptedBroker


def _loop_type(choice: str) -> type[asyncio.AbstractEventLoop]:
    seen: list[type[asyncio.AbstractEventLoop]] = []

    async def main() -> None:
        seen.append(type(asyncio.get_running_loop()))

    # on a thread of its own, as kop's main thread would: the runner ends by unsetting
    # its thread's event loop, which the suite's own main thread must keep
    runner = threading.Thread(target=event_loop.run, args=(main(), choice))
    runner.start()
    runner.join(30)
    return seen[0]


def test_kop_serves_on_uvloop_by_default() -> None:
    assert KopConfig().event_loop == "uvloop"
    assert issubclass(_loop_type("uvloop"), uvloop.Loop)


def test_asyncio_when_asked() -> None:
    assert not issubclass(_loop_type("asyncio"), uvloop.Loop)


def test_without_uvloop_installed_asyncio_serves_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    with caplog.at_level(logging.WARNING, logger="kop"):
        assert event_loop.loop_factory("uvloop") is None
    assert "uvloop is not installed" in caplog.text


async def _kafka_and_pulsar_sockets() -> tuple[int, bool]:
    """kop's Kafka listener answers ApiVersions, and kop's Pulsar client connects."""
    async with asyncio.timeout(20), gateway_with_hot_topic(1) as (gateway, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", gateway.config.port)
        body = struct.pack(">hhih", 18, 0, 7, -1)  # ApiVersions v0, correlation id 7
        writer.write(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        answer = await reader.readexactly(size)
        writer.close()
    broker = await ScriptedBroker().start()
    try:
        async with asyncio.timeout(20):
            conn = await Connection.open("127.0.0.1", broker.port)
        version = conn.server_version
        conn.close()
    finally:
        await broker.stop()
    return struct.unpack(">i", answer[:4])[0], bool(version)


def test_kafka_clients_and_pulsar_are_served_on_uvloop() -> None:
    """uvloop's transports are not subclasses of asyncio.Transport: kop must take them
    as the transports they are (the first bench run on uvloop found kop's Pulsar client
    refusing every connection)."""
    results: list[tuple[int, bool]] = []

    async def main() -> None:
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        results.append(await _kafka_and_pulsar_sockets())

    runner = threading.Thread(target=event_loop.run, args=(main(), "uvloop"))
    runner.start()
    runner.join(60)
    assert results == [(7, True)]
