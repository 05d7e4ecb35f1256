"""One client address cannot take the gateway from the others (over the in-memory
storage, through real sockets on loopback; 127.0.0.2 is a second client address):
past its cap (`max_connections_per_ip`, with overrides by IP or name) or its rate
(`max_connection_creation_rate_per_ip`) a new connection is closed once accepted,
while another address is served; a connection that sends no whole request, or on a
SASL listener does not authenticate, within `connection_setup_timeout_s` is closed,
a slow but live one is not. And the bookkeeping behind it stays bounded."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.clients.raw import RawClient
from kop.config.settings import ConfigError, load_config
from kop.protocol.errors import ErrorCode
from kop.server.addresses import (
    AddressLimits,
    OverridesError,
    canonical,
    parse_overrides,
)
from kop.server.closing import CONNECTION_RATE, MAX_CONNECTIONS_PER_IP
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import gateway_with_hot_topic, until
from tests.gateway.test_sasl_listeners import secured
from tests.sockets import closed_by_peer

OTHER = "127.0.0.2"


def _closed(gateway: Gateway, reason: str) -> float:
    return float(gateway.metrics.closed.labels(reason)._value.get())


def _open(gateway: Gateway) -> float:
    return float(gateway.metrics.connections._value.get())


def _client(port: int, source: str = "127.0.0.1", tls: Any = None) -> RawClient:
    """A RawClient whose socket comes from `source`."""
    client = RawClient.__new__(RawClient)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    client.sock = tls.wrap_socket(sock, server_hostname="localhost") if tls else sock
    client.client_id = "raw-test"
    client._correlation = 0
    return client


def _served(client: RawClient) -> bool:
    try:
        versions = client.request(18, 3, client_software_name="t", client_software_version="1")
    except OSError:
        return False
    return bool(versions.error_code == ErrorCode.none)


def _refused(client: RawClient) -> bool:
    return closed_by_peer(client.sock, 5)


async def test_past_its_cap_an_address_is_refused_and_another_served() -> None:
    async with gateway_with_hot_topic(1, max_connections_per_ip=3) as (gateway, _):
        port = gateway.kafka_port
        mine = [await asyncio.to_thread(_client, port) for _ in range(3)]
        for client in mine:
            assert await asyncio.to_thread(_served, client)
        newest = await asyncio.to_thread(_client, port)
        assert await asyncio.to_thread(_refused, newest)
        assert _closed(gateway, MAX_CONNECTIONS_PER_IP) == 1
        other = await asyncio.to_thread(_client, port, OTHER)  # another host: served
        assert await asyncio.to_thread(_served, other)
        for client in mine:  # those already served keep their service
            assert await asyncio.to_thread(_served, client)
        mine.pop().close()
        await until(lambda: _open(gateway) == 3, 5)  # two of mine and the other's
        again = await asyncio.to_thread(_client, port)  # its share has room again
        assert await asyncio.to_thread(_served, again)
        for client in [*mine, newest, other, again]:
            client.close()


async def test_overrides_by_ip_and_by_name() -> None:
    config = {
        "max_connections_per_ip": 1,
        "max_connections_per_ip_overrides": f"{OTHER}:3, localhost:2",
    }
    async with gateway_with_hot_topic(1, **config) as (gateway, _):
        port = gateway.kafka_port
        opened: list[RawClient] = []
        for source, allowed in (("127.0.0.1", 2), (OTHER, 3)):  # localhost is 127.0.0.1
            for _ in range(allowed):
                opened.append(await asyncio.to_thread(_client, port, source))
                assert await asyncio.to_thread(_served, opened[-1])
            opened.append(await asyncio.to_thread(_client, port, source))
            assert await asyncio.to_thread(_refused, opened[-1])
        assert _closed(gateway, MAX_CONNECTIONS_PER_IP) == 2
        for client in opened:
            client.close()


async def test_an_address_opening_connections_too_fast_is_refused() -> None:
    # 0.5 a second: a burst of 5 (10 s worth), then one every 2 s.
    async with gateway_with_hot_topic(1, max_connection_creation_rate_per_ip=0.5) as (gw, _):
        port = gw.kafka_port
        for _ in range(5):
            client = await asyncio.to_thread(_client, port)
            assert await asyncio.to_thread(_served, client)
            client.close()
        fast = await asyncio.to_thread(_client, port)
        assert await asyncio.to_thread(_refused, fast)
        assert _closed(gw, CONNECTION_RATE) == 1 and _closed(gw, MAX_CONNECTIONS_PER_IP) == 0
        other = await asyncio.to_thread(_client, port, OTHER)
        assert await asyncio.to_thread(_served, other)
        for client in (fast, other):
            client.close()


async def test_a_silent_socket_is_closed_at_the_setup_deadline_a_live_one_is_not() -> None:
    async with gateway_with_hot_topic(1, connection_setup_timeout_s=0.5) as (gateway, _):
        port = gateway.kafka_port
        live = await asyncio.to_thread(_client, port)
        assert await asyncio.to_thread(_served, live)
        silent = await asyncio.to_thread(_client, port)
        assert await asyncio.to_thread(closed_by_peer, silent.sock, 10)
        assert _closed(gateway, "setup_timeout") == 1 and _closed(gateway, "idle") == 0
        await until(lambda: _open(gateway) == 1, 5)
        assert await asyncio.to_thread(_served, live)  # accepted before the silent one
        for client in (live, silent):
            client.close()


async def test_a_silent_tls_socket_is_closed_and_forgotten(tmp_path: Path) -> None:
    """asyncio never tells a TLS listener's protocol about a handshake that does not
    end: without the deadline its connection stayed counted forever."""
    async with secured(tmp_path, connection_setup_timeout_s=0.5) as s:
        listener = s.gateway.listener
        assert listener is not None
        silent = await asyncio.to_thread(_client, s.ports["SSL"])  # no ClientHello
        assert await asyncio.to_thread(closed_by_peer, silent.sock, 10)
        await until(lambda: listener.open_connections == 0, 5)
        assert _closed(s.gateway, "setup_timeout") == 1
        client = await asyncio.to_thread(_client, s.ports["SSL"], "127.0.0.1", s.client_tls())
        assert await asyncio.to_thread(_served, client)
        for c in (silent, client):
            c.close()


async def test_sasl_must_complete_within_the_deadline_a_slow_live_client_may(
    tmp_path: Path,
) -> None:
    deadline_s = 1.5
    async with secured(tmp_path, connection_setup_timeout_s=deadline_s) as s:
        port = s.ports["SASL_PLAINTEXT"]
        token = "token:" + s.keys.token("alice")

        def slow_then_stuck() -> tuple[bool, bool, bool, float]:
            # before the connections open: kop's deadline for each starts after this
            started = time.monotonic()
            slow = _client(port)
            stuck = _client(port)  # opened with it, never authenticates
            assert _served(slow) and _served(stuck)  # ApiVersions passes before SASL
            time.sleep(deadline_s * 0.3)  # a slow client, pacing its own steps
            shake = slow.request(17, 1, mechanism="PLAIN")
            time.sleep(deadline_s * 0.3)
            auth = slow.request(36, 2, auth_bytes=f"\0\0{token}".encode())
            ok = shake.error_code == auth.error_code == ErrorCode.none
            stuck_closed = closed_by_peer(stuck.sock, 10)
            waited = time.monotonic() - started  # past the deadline by now
            still = _served(slow)
            slow.close()
            stuck.close()
            return ok, stuck_closed, still, waited

        ok, stuck_closed, still, waited = await asyncio.to_thread(slow_then_stuck)
        assert ok and stuck_closed and still
        assert waited >= deadline_s  # the slow one lived past the deadline
        assert _closed(s.gateway, "setup_timeout") == 1


def test_each_address_s_bucket_refills_at_its_rate() -> None:
    now = [0.0]
    limits = AddressLimits(100, {}, rate=2.0, clock=lambda: now[0])  # 20 at once
    assert [limits.admit("10.0.0.1") for _ in range(21)].count(CONNECTION_RATE) == 1
    now[0] += 1.0  # two more
    assert [limits.admit("10.0.0.1") for _ in range(3)] == [None, None, CONNECTION_RATE]
    assert limits.admit("::ffff:10.0.0.2") is None  # its own bucket, as 10.0.0.2
    assert limits.open_from("10.0.0.2") == 1


def test_buckets_are_forgotten_once_full_and_bounded_in_number() -> None:
    now = [0.0]
    limits = AddressLimits(100, {}, rate=1.0, clock=lambda: now[0], max_tracked=1000)
    for i in range(50_000):  # a flood of distinct addresses
        assert limits.admit(f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}") is None
        limits.release(f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}")
        assert limits.tracked <= 1000
    now[0] += 10.0  # every bucket full again: the same as none
    limits.admit("10.9.9.9")
    assert limits.tracked == 1
    assert limits.open_from("10.9.9.9") == 1 and limits.open_from("10.0.0.1") == 0


def test_overrides_in_kafkas_notation() -> None:
    assert parse_overrides("") == {}
    assert parse_overrides("a.example:5, 10.0.0.1:0,::1:7,[fe80::1]:2") == {
        "a.example": 5, "10.0.0.1": 0, "::1": 7, "fe80::1": 2,
    }  # fmt: skip
    for bad in ("host", "host:", ":5", "host:-1", "host:x", "a:1,a:2"):
        with pytest.raises(OverridesError):
            parse_overrides(bad)
    assert canonical("::ffff:127.0.0.1") == "127.0.0.1" and canonical("::1") == "::1"


def test_bad_overrides_stop_kop_with_one_line() -> None:
    with pytest.raises(ConfigError) as bad:
        load_config(environ={}, max_connections_per_ip_overrides="10.0.0.1:many")
    text = str(bad.value)
    assert "\n" not in text
    assert (
        "max_connections_per_ip_overrides" in text and "'10.0.0.1:many' is not host:count" in text
    )
