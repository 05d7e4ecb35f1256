"""Hostile SASL exchanges against a real listener (over the in-memory storage):
truncated, oversized and garbage frames, wrong mechanisms, requests before
authentication, random and replayed SCRAM messages. Each ends in a clean Kafka
error (or a close where none can be answered) and a closed connection; a client
authenticated beside them is never disturbed."""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.types import TopicName

from conformance.clients.raw import RawClient
from kop.config.settings import KopConfig
from kop.protocol.errors import ErrorCode
from kop.sasl.scram import from_password
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import free_port
from tests.sim.memory_admin import MemoryBackend
from tests.tls_material import TokenKeys

MECHANISMS = ["PLAIN", "OAUTHBEARER", "SCRAM-SHA-256", "SCRAM-SHA-512"]


@contextlib.contextmanager
def gateway_in_thread(config: KopConfig, backend: MemoryBackend) -> Iterator[Gateway]:
    """A gateway on an event loop of its own, so that blocking clients (and hypothesis)
    drive it from the test's thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    gateway = Gateway(config, backend)
    asyncio.run_coroutine_threadsafe(gateway.start(), loop).result(30)
    try:
        yield gateway
    finally:
        asyncio.run_coroutine_threadsafe(gateway.stop(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


@pytest.fixture(scope="module")
def listener(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, TokenKeys]]:
    keys = TokenKeys.make(tmp_path_factory.mktemp("keys"))
    port = free_port()
    backend = MemoryBackend()
    config = KopConfig(
        listeners=f"SASL_PLAINTEXT://127.0.0.1:{port}",
        sasl_enabled_mechanisms=",".join(MECHANISMS),
        auth_token_secret_key=keys.spec, admin_port=0, authorization_enabled=False,
        connection_failed_authentication_delay_ms=0,
    )  # fmt: skip
    with gateway_in_thread(config, backend) as gateway:
        cred = from_password("SCRAM-SHA-256", "pw", b"salt-salt", 4096)
        users = gateway.running.security.users
        users._users = {"u": {"SCRAM-SHA-256": cred}}
        yield port, keys


def _metadata(client: RawClient) -> object:
    topics = [MetadataRequestTopic(topic_id=None, name=TopicName("t"))]
    return client.request(3, 12, topics=topics, allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)  # fmt: skip


def _frame(client: RawClient, api: int, version: int, **fields: object) -> bytes:
    return client.encode(api, version, **fields)[1]


STEPS = st.one_of(
    st.tuples(st.just("handshake"), st.sampled_from([*MECHANISMS, "GSSAPI", "", "plain"])),
    st.tuples(st.just("authenticate"), st.binary(max_size=600)),
    st.tuples(st.just("metadata"), st.none()),
    st.tuples(st.just("garbage"), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("truncated"), st.integers(min_value=20, max_value=4000)),
    st.tuples(st.just("oversized"), st.integers(min_value=512 * 1024 + 1, max_value=1 << 30)),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(STEPS, min_size=1, max_size=5))
def test_hostile_exchanges_end_cleanly_and_disturb_no_one(
    listener: tuple[int, TokenKeys], script: list[tuple[str, object]]
) -> None:
    port, keys = listener
    good = RawClient(port, timeout=10)
    assert good.sasl_plain("", "token:" + keys.token("alice")).error_code == ErrorCode.none
    bad = RawClient(port, timeout=10)
    try:
        for kind, arg in script:
            if not _step(bad, kind, arg):
                break  # kop answered and closed, or closed: the exchange is over
        else:
            bad.close()
    except (ConnectionError, OSError):
        pass  # closed by kop mid-step: also clean
    assert _metadata(good).brokers  # type: ignore[attr-defined]
    good.close()


def _step(client: RawClient, kind: str, arg: object) -> bool:
    """Send one hostile step; False once kop has ended the connection."""
    if kind == "handshake":
        answer = client.request(17, 1, mechanism=arg)
        if answer.error_code != ErrorCode.none:
            assert answer.error_code in (ErrorCode.unsupported_sasl_mechanism,
                                         ErrorCode.illegal_sasl_state)  # fmt: skip
            assert client.wait_closed_by_peer(5)
            return False
        return True
    if kind == "authenticate":
        answer = client.request(36, 2, auth_bytes=arg)
        if answer.error_code == ErrorCode.none:
            return True  # a SCRAM first message, or random bytes that were one
        assert answer.error_code in (ErrorCode.sasl_authentication_failed,
                                     ErrorCode.illegal_sasl_state)  # fmt: skip
        assert client.wait_closed_by_peer(5)
        return False
    if kind == "metadata":
        try:
            _metadata(client)
        except (ConnectionError, OSError):
            return False
        return True  # authenticated by an earlier step: answered
    if kind == "garbage":
        client.send_frame(bytes(arg))  # type: ignore[arg-type]
    elif kind == "truncated":
        client.sock.sendall(struct.pack(">i", arg) + b"\x00\x24")
        client.sock.shutdown(1)
    else:
        client.sock.sendall(struct.pack(">i", arg))
    assert client.wait_closed_by_peer(10)
    return False


def test_a_replayed_scram_final_message_is_refused(listener: tuple[int, TokenKeys]) -> None:
    port, _keys = listener
    first = RawClient(port, timeout=10)
    assert first.request(17, 1, mechanism="SCRAM-SHA-256").error_code == ErrorCode.none
    challenge = first.request(36, 2, auth_bytes=b"n,,n=u,r=abc").auth_bytes.decode()
    nonce = challenge.split(",")[0]
    final = f"c=biws,{nonce},p=" + "A" * 43 + "="
    assert first.request(36, 2, auth_bytes=final.encode()).error_code == (
        ErrorCode.sasl_authentication_failed
    )
    again = RawClient(port, timeout=10)
    again.request(17, 1, mechanism="SCRAM-SHA-256")
    again.request(36, 2, auth_bytes=b"n,,n=u,r=abc")
    replay = again.request(36, 2, auth_bytes=final.encode())
    assert replay.error_code == ErrorCode.sasl_authentication_failed
    assert again.wait_closed_by_peer(5)
