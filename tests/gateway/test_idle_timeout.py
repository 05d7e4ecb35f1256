"""The idle timeout (`idle_timeout_s`, Kafka's `connections.max.idle.ms`) through a real
`RequestStream`: a connection with no whole request for that long is closed as idle,
also in the middle of a frame; one whose requests keep coming stays open however long
it lives. The timeout is kept with one timer per period (`IdleWatch`), not one per
request, so these pin the re-arming as well as the expiry."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from conformance.clients.raw import RawClient
from kop.server.closing import IDLE
from kop.server.connection import Connection, Limits
from kop.server.idle_watch import IdleWatch
from kop.server.stream import RequestStream
from kop.storage.naming import Namespace
from tests.gateway.test_server_limits import _NO_SERVICES, _FailingWriter, _Observer

IDLE_S = 0.4


class _Writer(_FailingWriter):
    """A client that reads every answer."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += 1

    async def drain(self) -> None:
        return None


class _Closes(_Observer):
    def __init__(self) -> None:
        super().__init__()
        self.reasons: list[str] = []

    def connection_closed(self, reason: str) -> None:
        self.reasons.append(reason)


def _api_versions() -> bytes:
    _, frame = RawClient.__new__(RawClient).encode_standalone(
        18, 3, client_software_name="t", client_software_version="1"
    )
    return len(frame).to_bytes(4, "big") + frame


def _feed(stream: RequestStream, data: bytes) -> None:
    stream.get_buffer(-1)[: len(data)] = data
    stream.buffer_updated(len(data))


def _connection() -> tuple[Connection, RequestStream, _Writer, _Closes]:
    stream, writer, observer = RequestStream(1 << 20, 1 << 20), _Writer(), _Closes()
    conn = Connection(
        stream, writer, _NO_SERVICES, Namespace("public", "default"),
        Limits(1 << 20, 8, idle_timeout_s=IDLE_S), observer,
    )  # fmt: skip
    return conn, stream, writer, observer


async def test_a_silent_connection_is_closed_as_idle_after_the_timeout() -> None:
    conn, _, writer, observer = _connection()
    started = time.monotonic()
    await asyncio.wait_for(conn.run(), IDLE_S + 5)
    took = time.monotonic() - started
    assert observer.reasons == [IDLE]
    assert took >= IDLE_S - 0.05, f"closed after {took:.2f}s, the timeout is {IDLE_S}s"
    assert writer.closed and observer.open == 0


async def test_requests_that_keep_coming_keep_the_connection_open_past_many_timeouts() -> None:
    conn, stream, writer, observer = _connection()
    running = asyncio.create_task(conn.run())
    frame = _api_versions()
    for sent in range(1, 13):  # 12 requests IDLE_S / 3 apart: 4 timeouts long
        await asyncio.sleep(IDLE_S / 3)
        assert not running.done(), f"closed after {sent - 1} requests: {observer.reasons}"
        _feed(stream, frame)
    await asyncio.wait_for(running, IDLE_S + 5)  # then silence: idle
    assert writer.written == 12
    assert observer.reasons == [IDLE]


async def test_a_frame_that_stops_half_way_is_closed_as_idle_not_as_a_reset() -> None:
    conn, stream, _, observer = _connection()
    running = asyncio.create_task(conn.run())
    frame = _api_versions()
    _feed(stream, frame[: len(frame) // 2])  # a trickle that stops
    await asyncio.wait_for(running, IDLE_S + 5)
    assert observer.reasons == [IDLE]


async def test_the_watch_sleeps_to_the_deadline_of_the_wait_in_progress() -> None:
    fired: list[float] = []
    loop = asyncio.get_running_loop()
    watch = IdleWatch(IDLE_S, lambda: fired.append(loop.time()))
    watch.waiting()
    await asyncio.sleep(IDLE_S / 2)
    watch.done()
    watch.waiting()  # a new wait, half way through the first timer's period
    began = loop.time()
    await asyncio.sleep(IDLE_S * 2)
    assert len(fired) == 1 and fired[0] >= began + IDLE_S - 0.01
    assert watch.fired
    watch.close()


async def test_a_closed_watch_never_fires() -> None:
    fired: list[Any] = []
    watch = IdleWatch(0.05, lambda: fired.append(1))
    watch.waiting()
    watch.close()
    await asyncio.sleep(0.2)
    assert fired == []
