"""How kop's Pulsar client opens connections on a production cluster (issue 19):
credentials in CONNECT and again on the broker's AUTH_CHALLENGE, the proxy's
target as `host:port`, TLS with its trust and hostname rules, lookups through a
proxy and for a listener, several hosts in one service URL."""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kop.pulsar.wire.auth import TokenAuth
from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import PulsarWireError, TlsError
from kop.pulsar.wire.lookup import lookup
from kop.pulsar.wire.options import ConnectOptions
from kop.pulsar.wire.pool import ConnectionPool
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.service_url import ServiceUrl
from kop.pulsar.wire.session import Session
from kop.pulsar.wire.tls import TlsOptions
from tests.unit.scripted_broker import Script, ScriptedBroker, answer_connect

T = pb.BaseCommand.Type
TOPIC = "persistent://public/default/t-partition-0"


def _lookup_answer(broker_url: str, *, tls_url: str = "", proxy: bool = False) -> pb.BaseCommand:
    return pb.BaseCommand(
        type=T.LOOKUP_RESPONSE,
        lookupTopicResponse=pb.CommandLookupTopicResponse(
            brokerServiceUrl=broker_url,
            brokerServiceUrlTls=tls_url,
            response=pb.CommandLookupTopicResponse.Connect,
            request_id=0,
            authoritative=True,
            proxy_through_service_url=proxy,
        ),
    )


def lookups_answered(broker_url: str, *, tls_url: str = "", proxy: bool = False) -> Script:
    def script(b: ScriptedBroker, writer: asyncio.StreamWriter, cmd: pb.BaseCommand) -> None:
        answer_connect(b, writer, cmd)
        if cmd.type == T.LOOKUP:
            answer = _lookup_answer(broker_url, tls_url=tls_url, proxy=proxy)
            answer.lookupTopicResponse.request_id = cmd.lookupTopic.request_id
            b.write(writer, answer)

    return script


async def test_connect_presents_the_token_and_asks_for_refresh_challenges() -> None:
    broker = await ScriptedBroker().start()
    conn = await Connection.open("127.0.0.1", broker.port, auth=TokenAuth("token:abc.def"))
    connect = broker.of_type(T.CONNECT)[0].connect
    assert (connect.auth_method_name, connect.auth_data) == ("token", b"abc.def")
    # Without this flag a broker closes the connection when the token expires.
    assert connect.feature_flags.supports_auth_refresh
    conn.close()
    await broker.stop()


async def test_an_auth_challenge_is_answered_with_the_token_file_as_it_is_now(
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first-token\n")
    broker = await ScriptedBroker().start()
    conn = await Connection.open("127.0.0.1", broker.port, auth=TokenAuth(f"file://{token_file}"))
    assert broker.of_type(T.CONNECT)[0].connect.auth_data == b"first-token"
    token_file.write_text("rotated-token-of-another-length\n")  # an operator rotates it
    # The broker's refresh: it asks again when the token it holds expires.
    challenge = pb.CommandAuthChallenge(
        server_version="scripted",
        challenge=pb.AuthData(auth_method_name="token", auth_data=b"PulsarAuthRefresh"),
        protocol_version=21,
    )
    await broker.push(pb.BaseCommand(type=T.AUTH_CHALLENGE, authChallenge=challenge))
    await broker.wait_for(T.AUTH_RESPONSE)
    response = broker.of_type(T.AUTH_RESPONSE)[0].authResponse.response
    assert (response.auth_method_name, response.auth_data) == (
        "token",
        b"rotated-token-of-another-length",
    )
    conn.close()
    await broker.stop()


async def test_through_a_proxy_connect_names_the_target_broker_as_host_and_port() -> None:
    """The proxy validates `host:port`; a URL made it answer "Target broker cannot be
    validated" and every produce through it timed out (issue 19)."""
    proxy = await ScriptedBroker().start()
    pool = ConnectionPool(operation_timeout_s=5, keepalive_s=30)
    await pool.get("pulsar://broker-2.internal:6652", proxy.url)
    assert proxy.of_type(T.CONNECT)[0].connect.proxy_to_broker_url == "broker-2.internal:6652"
    pool.close()
    await proxy.stop()


async def test_a_lookup_answered_by_a_proxy_connects_through_the_proxy() -> None:
    proxy = await ScriptedBroker(lookups_answered("pulsar://b2:6652", proxy=True)).start()
    pool = ConnectionPool(operation_timeout_s=5, keepalive_s=30)
    address = await lookup(pool, ServiceUrl.parse(proxy.url), TOPIC)
    assert (address.logical_url, address.physical_url) == ("pulsar://b2:6652", proxy.url)
    pool.close()
    await proxy.stop()


async def test_a_lookup_asks_for_the_configured_listener() -> None:
    broker = await ScriptedBroker(lookups_answered("pulsar://external:6650")).start()
    pool = ConnectionPool(
        operation_timeout_s=5, keepalive_s=30, options=ConnectOptions(listener_name="external")
    )
    address = await lookup(pool, ServiceUrl.parse(broker.url), TOPIC)
    assert broker.of_type(T.LOOKUP)[0].lookupTopic.advertised_listener_name == "external"
    assert address.logical_url == "pulsar://external:6650"
    pool.close()
    await broker.stop()


async def test_a_service_url_of_several_hosts_goes_on_to_the_next_when_one_is_down() -> None:
    broker = await ScriptedBroker(lookups_answered("pulsar://127.0.0.1:1")).start()
    dead = _closed_port()
    session = Session(
        f"pulsar://127.0.0.1:{dead},127.0.0.1:{broker.port}",
        operation_timeout_s=5,
        keepalive_s=30,
    )
    address = await session.within_timeout(
        "lookup", lambda: lookup(session.pool, session.service, TOPIC)
    )
    assert address.logical_url == "pulsar://127.0.0.1:1"
    session.pool.close()
    await broker.stop()


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A CA and a server certificate for `localhost` only, made with openssl."""
    d = tmp_path_factory.mktemp("certs")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=kop-test-ca")  # fmt: skip
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=localhost")  # fmt: skip
    (d / "san.ext").write_text("subjectAltName=DNS:localhost\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")  # fmt: skip
    yield d


def _server_context(certs: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(certs / "server.pem", certs / "server.key")
    return ctx


async def _tls_connect(certs: Path, host: str, tls: TlsOptions) -> list[pb.BaseCommand]:
    broker = await ScriptedBroker(ssl_context=_server_context(certs)).start()
    pool = ConnectionPool(operation_timeout_s=5, keepalive_s=30, options=ConnectOptions(tls=tls))
    try:
        await pool.get(f"pulsar+ssl://{host}:{broker.port}")
        return broker.of_type(T.CONNECT)
    finally:
        pool.close()
        await broker.stop()


async def test_tls_with_the_clusters_ca_connects(certs: Path) -> None:
    assert await _tls_connect(certs, "localhost", TlsOptions(trust_certs_file=certs / "ca.pem"))


async def test_tls_to_an_untrusted_certificate_fails_at_once_and_says_so(certs: Path) -> None:
    with pytest.raises(TlsError) as caught:
        await _tls_connect(certs, "localhost", TlsOptions())
    assert not caught.value.retriable  # the same attempt fails again: no 60-second wait
    assert "certificate" in str(caught.value)


async def test_tls_checks_the_hostname_unless_told_not_to(certs: Path) -> None:
    trust = certs / "ca.pem"
    with pytest.raises(TlsError, match=r"(?i)hostname|IP address mismatch"):
        await _tls_connect(certs, "127.0.0.1", TlsOptions(trust_certs_file=trust))
    assert await _tls_connect(
        certs, "127.0.0.1", TlsOptions(trust_certs_file=trust, hostname_verification=False)
    )


async def test_a_lookup_over_tls_follows_the_brokers_tls_url(certs: Path) -> None:
    script = lookups_answered("pulsar://b1:6650", tls_url="pulsar+ssl://b1:6651")
    broker = await ScriptedBroker(script, ssl_context=_server_context(certs)).start()
    options = ConnectOptions(tls=TlsOptions(trust_certs_file=certs / "ca.pem"))
    pool = ConnectionPool(operation_timeout_s=5, keepalive_s=30, options=options)
    address = await lookup(pool, ServiceUrl.parse(broker.url), TOPIC)
    assert address.logical_url == "pulsar+ssl://b1:6651"
    pool.close()
    await broker.stop()


async def test_a_broker_without_the_wanted_url_is_a_final_error() -> None:
    broker = await ScriptedBroker(lookups_answered("", tls_url="pulsar+ssl://b1:6651")).start()
    pool = ConnectionPool(
        operation_timeout_s=5, keepalive_s=30, options=ConnectOptions(listener_name="internal")
    )
    with pytest.raises(PulsarWireError, match="listener 'internal'") as caught:
        await lookup(pool, ServiceUrl.parse(broker.url), TOPIC)
    assert not caught.value.retriable
    pool.close()
    await broker.stop()


def test_token_file_missing_at_start_is_a_config_error(tmp_path: Path) -> None:
    from kop.pulsar.wire.auth import AuthConfigError

    with pytest.raises(AuthConfigError, match="token file"):
        TokenAuth(f"file://{tmp_path / 'nope'}")


def test_a_token_file_is_read_again_only_when_it_changes(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("one")
    auth = TokenAuth(f"file://{token_file}")
    assert auth.token() == "one"
    token_file.write_text("two")
    stat = token_file.stat()
    os.utime(token_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert auth.token() == "two"
    token_file.unlink()  # a rotation in progress: keep the last good token
    assert auth.token() == "two"
