"""kop's four kinds of listener side by side (over the in-memory storage): each
advertises itself, a SASL listener lets nothing but ApiVersions and SASL pass
before authentication, refusals are Kafka's codes after the configured delay and
leave other connections alone, a session ends with its token, and TLS files are
reloaded without dropping anyone."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.types import TopicName

from conformance.clients.raw import RawClient
from kop.config.settings import KopConfig
from kop.protocol.errors import ErrorCode
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import free_port
from tests.sim.memory_admin import MemoryBackend
from tests.tls_material import Ca, TokenKeys


@dataclass
class Secured:
    gateway: Gateway
    ports: dict[str, int]
    keys: TokenKeys
    ca: Ca
    tls_dir: Path

    def client_tls(self, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca.cert_file))
        if cert is not None:
            ctx.load_cert_chain(str(cert[0]), str(cert[1]))
        return ctx

    def raw(self, listener: str, **kw: object) -> RawClient:
        tls = self.client_tls() if "SSL" in listener else None
        return RawClient(self.ports[listener], timeout=10, tls=tls, **kw)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def secured(tmp_path: Path, **config: object) -> AsyncIterator[Secured]:
    ca = Ca.make(tmp_path / "ca")
    cert, key = ca.issue("server", "localhost", server=True)
    tls_dir = tmp_path / "tls"
    tls_dir.mkdir()
    shutil.copy(cert, tls_dir / "server.cert.pem")
    shutil.copy(key, tls_dir / "server.key.pem")
    keys = TokenKeys.make(tmp_path / "keys")
    ports = {p: free_port() for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
    settings: dict[str, object] = {
        "listeners": ",".join(f"{p}://127.0.0.1:{port}" for p, port in ports.items()),
        "sasl_enabled_mechanisms": "PLAIN,OAUTHBEARER",
        "auth_token_secret_key": keys.spec,
        "ssl_cert_file": tls_dir / "server.cert.pem",
        "ssl_key_file": tls_dir / "server.key.pem",
        "ssl_ca_file": ca.cert_file,
        "ssl_client_auth": "requested",
        "admin_port": 0,
        "connection_failed_authentication_delay_ms": 300,
        **config,
    }
    gateway = Gateway(KopConfig(**settings), MemoryBackend())  # type: ignore[arg-type]
    await gateway.start()
    try:
        yield Secured(gateway, ports, keys, ca, tls_dir)
    finally:
        await gateway.stop()


def _metadata(client: RawClient) -> object:
    topics = [MetadataRequestTopic(topic_id=None, name=TopicName("t"))]
    return client.request(
        3, 12, topics=topics, allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )  # fmt: skip


async def test_each_listener_advertises_its_own_address(tmp_path: Path) -> None:
    async with secured(tmp_path) as s:
        assert s.gateway.kafka_ports == s.ports
        for listener in s.ports:
            client = await asyncio.to_thread(s.raw, listener)
            if "SASL" in listener:
                token = s.keys.token("alice")
                ok = await asyncio.to_thread(client.sasl_plain, "", "token:" + token)
                assert ok.error_code == ErrorCode.none
            meta = await asyncio.to_thread(_metadata, client)
            assert [(b.host, b.port) for b in meta.brokers] == [("127.0.0.1", s.ports[listener])]  # type: ignore[attr-defined]
            client.close()


async def test_only_apiversions_and_sasl_pass_before_authentication(tmp_path: Path) -> None:
    async with secured(tmp_path) as s:
        for listener in ("SASL_PLAINTEXT", "SASL_SSL"):
            client = await asyncio.to_thread(s.raw, listener)
            versions = await asyncio.to_thread(client.request, 18, 3, client_software_name="t",
                                               client_software_version="1")  # fmt: skip
            keys = {k.api_key for k in versions.api_keys}
            assert {17, 36} <= keys
            with pytest.raises((ConnectionError, OSError)):
                await asyncio.to_thread(_metadata, client)
            client.close()
        # the PLAINTEXT listener answers SASL requests as Kafka does there
        plain = await asyncio.to_thread(s.raw, "PLAINTEXT")
        shake = await asyncio.to_thread(plain.request, 17, 1, mechanism="PLAIN")
        assert shake.error_code == ErrorCode.illegal_sasl_state
        assert (await asyncio.to_thread(_metadata, plain)).brokers  # type: ignore[attr-defined]


async def test_a_refusal_is_delayed_final_and_touches_no_other_connection(tmp_path: Path) -> None:
    async with secured(tmp_path) as s:
        good = await asyncio.to_thread(s.raw, "SASL_PLAINTEXT")
        token = s.keys.token("alice")
        assert (await asyncio.to_thread(good.sasl_plain, "", "token:" + token)).error_code == 0
        for password in (
            "token:" + token[:-3],
            "token:",
            "hunter2",
            "token:" + s.keys.token("a", -1),
        ):
            bad = await asyncio.to_thread(s.raw, "SASL_PLAINTEXT")
            started = time.monotonic()
            answer = await asyncio.to_thread(bad.sasl_plain, "", password)
            assert answer.error_code == ErrorCode.sasl_authentication_failed
            assert time.monotonic() - started >= 0.25  # connection_failed_authentication_delay_ms
            assert answer.error_message == "Authentication failed: Invalid username or password"
            assert await asyncio.to_thread(bad.wait_closed_by_peer, 5)
        wrong = await asyncio.to_thread(s.raw, "SASL_SSL")
        shake = await asyncio.to_thread(wrong.sasl, "GSSAPI", b"")
        assert shake.error_code == ErrorCode.unsupported_sasl_mechanism
        assert set(shake.mechanisms) == {"PLAIN", "OAUTHBEARER"}
        assert await asyncio.to_thread(wrong.wait_closed_by_peer, 5)
        assert (await asyncio.to_thread(_metadata, good)).brokers  # type: ignore[attr-defined]
        wrong.close()
        good.close()


async def test_a_session_ends_with_its_token_unless_renewed(tmp_path: Path) -> None:
    async with secured(tmp_path) as s:
        short = await asyncio.to_thread(s.raw, "SASL_PLAINTEXT")
        answer = await asyncio.to_thread(short.sasl_plain, "", "token:" + s.keys.token("a", 2))
        assert 0 < answer.session_lifetime.total_seconds() <= 2
        renewed = await asyncio.to_thread(s.raw, "SASL_PLAINTEXT")
        await asyncio.to_thread(renewed.sasl_plain, "", "token:" + s.keys.token("a", 2))
        # KIP-368: the same principal again, with a token that lasts
        again = await asyncio.to_thread(renewed.sasl_plain, "", "token:" + s.keys.token("a", 600))
        assert again.error_code == ErrorCode.none
        assert await asyncio.to_thread(short.wait_closed_by_peer, 10)
        assert (await asyncio.to_thread(_metadata, renewed)).brokers  # type: ignore[attr-defined]


async def test_oauthbearer_and_a_client_certificate(tmp_path: Path) -> None:
    async with secured(tmp_path) as s:
        client = await asyncio.to_thread(s.raw, "SASL_SSL")
        token = s.keys.token("bob")
        msg = f"n,,\x01auth=Bearer {token}\x01tenant=public/default\x01\x01".encode()
        assert (await asyncio.to_thread(client.sasl, "OAUTHBEARER", msg)).error_code == 0
        cert = s.ca.issue("client", "carol", server=False)
        mtls = await asyncio.to_thread(
            RawClient, s.ports["SSL"], 10, "127.0.0.1", s.client_tls(cert)
        )
        assert (await asyncio.to_thread(_metadata, mtls)).brokers  # type: ignore[attr-defined]
        # kop serves it as carol (the certificate's common name)
        conns = s.gateway.listener._connections.values()
        roles = {c._gate.principal.role for c in conns if c._gate.security.name == "SSL"}  # type: ignore[union-attr]
        assert roles == {"carol"}
        client.close()
        mtls.close()


async def test_tls_files_are_reloaded_on_change_and_on_sighup(tmp_path: Path) -> None:
    async with secured(tmp_path, ssl_reload_check_s=0.1) as s:
        first = await asyncio.to_thread(s.raw, "SSL")
        old_serial = first.sock.getpeercert()["serialNumber"]  # type: ignore[union-attr]
        for trigger in ("change", "sighup"):
            cert, key = s.ca.issue(f"server-{trigger}", "localhost", server=True)
            if trigger == "change":
                shutil.copy(key, s.tls_dir / "server.key.pem")
                shutil.copy(cert, s.tls_dir / "server.cert.pem")
            else:
                # same mtimes: only the signal can tell kop to look
                stamp = os.stat(s.tls_dir / "server.cert.pem")
                shutil.copy(key, s.tls_dir / "server.key.pem")
                shutil.copy(cert, s.tls_dir / "server.cert.pem")
                for name in ("server.key.pem", "server.cert.pem"):
                    os.utime(s.tls_dir / name, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
                os.kill(os.getpid(), signal.SIGHUP)
            want = _serial(cert)

            async def serves_new(want: int = want) -> bool:
                client = await asyncio.to_thread(s.raw, "SSL")
                serial = client.sock.getpeercert()["serialNumber"]  # type: ignore[union-attr]
                client.close()
                return bool(int(serial, 16) == want)

            deadline = time.monotonic() + 5
            while not await serves_new():
                assert time.monotonic() < deadline, f"new certificate not served after {trigger}"
                await asyncio.sleep(0.05)
        # the connection made before both reloads goes on
        assert first.sock.getpeercert()["serialNumber"] == old_serial  # type: ignore[union-attr]
        assert (await asyncio.to_thread(_metadata, first)).brokers  # type: ignore[attr-defined]
        first.close()


def _serial(cert: Path) -> int:
    return int(x509.load_pem_x509_certificate(cert.read_bytes()).serial_number)
