"""Unmodified clients of every family over kop's TLS and SASL listeners, on a real
Pulsar: SASL_SSL with PLAIN (password `token:<JWT>`) for librdkafka, kafka-python,
aiokafka and the Java client; OAUTHBEARER for librdkafka; a client certificate on
the SSL listener; and a wrong, an expired and an unsigned token refused with
Kafka's SASL_AUTHENTICATION_FAILED."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # type: ignore[import-untyped]
from aiokafka.helpers import create_ssl_context  # type: ignore[import-untyped]
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer  # type: ignore[import-untyped]

from tests.integration.conftest import PULSAR_HTTP, KopProcess, free_port
from tests.integration.test_java_client import JAVA_DIR, java_classpath  # noqa: F401
from tests.tls_material import Ca, TokenKeys

N = 20
REPO = Path(__file__).resolve().parents[2]
# A namespace of this module's own: kop authorizes its clients by the grants there.
NS = f"public/sec-{uuid.uuid4().hex[:8]}"


@dataclass
class SecureKop:
    kop: KopProcess
    ports: dict[str, int]
    keys: TokenKeys
    ca: Ca
    client_cert: tuple[Path, Path]

    def address(self, listener: str) -> str:
        return f"localhost:{self.ports[listener]}"

    def librdkafka(self, listener: str, **extra: Any) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.address(listener),
            "security.protocol": listener,
            **extra,
        }
        if "SSL" in listener:
            conf["ssl.ca.location"] = str(self.ca.cert_file)
        return conf


@pytest.fixture(scope="module")
def secure(pulsar: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKop]:
    base = tmp_path_factory.mktemp("secure")
    ca = Ca.make(base / "ca")
    cert, key = ca.issue("server", "localhost", server=True)
    keys = TokenKeys.make(base / "keys")
    _pulsar("PUT", f"namespaces/{NS}", {})
    for role in ("alice", "carol"):  # carol: the client certificate's common name
        _pulsar("POST", f"namespaces/{NS}/permissions/{role}", ["produce", "consume"])
    kop = KopProcess(base)
    ports = {
        "PLAINTEXT": kop.port,
        **{p: free_port() for p in ("SSL", "SASL_SSL", "SASL_PLAINTEXT")},
    }
    kop.env.update(
        KOP_LISTENERS=",".join(f"{p}://127.0.0.1:{port}" for p, port in ports.items()),
        KOP_ADVERTISED_LISTENERS=",".join(f"{p}://localhost:{port}" for p, port in ports.items()),
        KOP_SASL_ENABLED_MECHANISMS="PLAIN,OAUTHBEARER",
        KOP_AUTH_TOKEN_SECRET_KEY=keys.spec,
        KOP_SSL_CERT_FILE=str(cert),
        KOP_SSL_KEY_FILE=str(key),
        KOP_SSL_CA_FILE=str(ca.cert_file),
        KOP_SSL_CLIENT_AUTH="requested",
        KOP_TENANT=NS.split("/")[0],
        KOP_NAMESPACE=NS.split("/")[1],
        KOP_SUPERUSER_ROLES="root",
    )
    kop.start()
    yield SecureKop(kop, ports, keys, ca, ca.issue("client", "carol", server=False))
    kop.stop()


def _pulsar(method: str, path: str, body: object = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{PULSAR_HTTP}/admin/v2/{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read()
    return json.loads(text) if text else None


def _plain(s: SecureKop, token: str) -> dict[str, Any]:
    return {"sasl.mechanisms": "PLAIN", "sasl.username": NS,
            "sasl.password": f"token:{token}"}  # fmt: skip


def _librdkafka_roundtrip(conf: dict[str, Any], topic: str) -> list[str]:
    producer = Producer(conf)
    for i in range(N):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: list[str] = []
    try:
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg.value().decode())
            if len(seen) == N:
                break
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen


def test_librdkafka_over_sasl_ssl_plain_and_oauthbearer_and_mtls(secure: SecureKop) -> None:
    expected = [f"v{i}" for i in range(N)]
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    plain = secure.librdkafka("SASL_SSL", **_plain(secure, secure.keys.token("alice")))
    assert _librdkafka_roundtrip(plain, topic) == expected

    token = secure.keys.token("alice", expires_in_s=3600)

    def oauth_cb(_config: str) -> tuple[str, float]:
        return token, float(jwt.decode(token, options={"verify_signature": False})["exp"])

    oauth = secure.librdkafka(
        "SASL_SSL",
        **{
            "sasl.mechanisms": "OAUTHBEARER",
            "oauth_cb": oauth_cb,
            "sasl.oauthbearer.extensions": f"tenant={NS}",
        },
    )
    assert _librdkafka_roundtrip(oauth, f"{topic}-o") == expected

    cert, key = secure.client_cert
    mtls = secure.librdkafka(
        "SSL", **{"ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
    )
    assert _librdkafka_roundtrip(mtls, f"{topic}-m") == expected


def test_refused_tokens_get_sasl_authentication_failed(secure: SecureKop) -> None:
    unsigned = jwt.encode({"sub": "alice"}, None, algorithm="none")
    wrong_key = jwt.encode({"sub": "alice"}, b"w" * 32, algorithm="HS256")
    expired = secure.keys.token("alice", expires_in_s=-10)
    for token in (unsigned, wrong_key, expired):
        errors: list[KafkaError] = []
        conf = secure.librdkafka("SASL_SSL", **_plain(secure, token), error_cb=errors.append)
        admin = AdminClient(conf)
        for _ in range(40):  # librdkafka reports it through error_cb (and retries)
            admin.poll(0.25)
            if errors:
                break
        assert errors, "no error reported"
        assert errors[0].code() == KafkaError._AUTHENTICATION, errors[0]
        assert "Authentication failed: Invalid username or password" in errors[0].str()


def test_kafka_python_over_sasl_ssl(secure: SecureKop) -> None:
    topic = f"sec-kp-{uuid.uuid4().hex[:8]}"
    conf = {
        "bootstrap_servers": secure.address("SASL_SSL"),
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": NS,
        "sasl_plain_password": "token:" + secure.keys.token("alice"),
        "ssl_cafile": str(secure.ca.cert_file),
    }
    producer = KafkaProducer(**conf)
    for i in range(N):
        producer.send(topic, f"v{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=15000, **conf)
    seen = [m.value.decode() for _, m in zip(range(N), consumer, strict=False)]
    consumer.close()
    assert seen == [f"v{i}" for i in range(N)]


async def test_aiokafka_over_sasl_ssl(secure: SecureKop) -> None:
    topic = f"sec-aio-{uuid.uuid4().hex[:8]}"

    async def roundtrip() -> list[str]:
        conf = {
            "bootstrap_servers": secure.address("SASL_SSL"),
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": NS,
            "sasl_plain_password": "token:" + secure.keys.token("alice"),
            "ssl_context": create_ssl_context(cafile=str(secure.ca.cert_file)),
        }
        producer = AIOKafkaProducer(**conf)
        await producer.start()
        try:
            for i in range(N):
                await producer.send_and_wait(topic, f"v{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **conf)
        await consumer.start()
        seen: list[str] = []
        try:
            async with asyncio.timeout(30):
                async for msg in consumer:
                    seen.append(msg.value.decode())
                    if len(seen) == N:
                        break
        finally:
            await consumer.stop()
        return seen

    assert await roundtrip() == [f"v{i}" for i in range(N)]


def test_java_client_over_sasl_ssl(secure: SecureKop, java_classpath: str) -> None:  # noqa: F811
    topic = f"sec-java-{uuid.uuid4().hex[:8]}"
    token = secure.keys.token("alice")
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            f'username="{NS}" password="token:{token}";')  # fmt: skip
    settings = [
        "security.protocol=SASL_SSL",
        "sasl.mechanism=PLAIN",
        f"sasl.jaas.config={jaas}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={secure.ca.cert_file}",
    ]
    out = subprocess.run(
        ["java", "-cp", java_classpath, str(JAVA_DIR / "SecureClient.java"),
         secure.address("SASL_SSL"), topic, str(N), *settings],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert f"READ {','.join(f'v{i}' for i in range(N))}" in out.stdout, out.stdout + out.stderr
    bad = subprocess.run(
        ["java", "-cp", java_classpath, str(JAVA_DIR / "SecureClient.java"),
         secure.address("SASL_SSL"), topic, "1",
         *[s.replace(token, token[:-4] + "AAAA") for s in settings]],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert "FAILED SaslAuthenticationException" in bad.stdout, bad.stdout + bad.stderr


def _acls(secure: SecureKop, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Kafka's own kafka-acls, from the reference distribution, against kop."""
    return subprocess.run(
        [sys.executable, str(REPO / "tools" / "kafka.py"), "tool", "acls",
         "--bootstrap-server", secure.address("SASL_SSL"), "--command-config", str(config), *args],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def test_kafka_acls_reads_and_changes_pulsars_permissions(
    secure: SecureKop, tmp_path: Path
) -> None:
    topic = f"acl-{uuid.uuid4().hex[:8]}"
    config = tmp_path / "root.properties"
    token = secure.keys.token("root")  # a superuser (KOP_SUPERUSER_ROLES)
    config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{NS}" password="token:{token}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={secure.ca.cert_file}\n"
    )
    missing = _acls(secure, config, "--add", "--allow-principal", "User:dave",
                    "--operation", "Read", "--topic", topic)  # fmt: skip
    assert f"create {topic} first" in missing.stdout + missing.stderr, missing
    root = AdminClient(secure.librdkafka("SASL_SSL", **_plain(secure, token)))
    root.create_topics([NewTopic(topic, 1)])[topic].result(timeout=30)
    added = _acls(secure, config, "--add", "--allow-principal", "User:dave",
                  "--consumer", "--topic", topic, "--group", "dave-group")  # fmt: skip
    assert added.returncode == 0, added.stdout + added.stderr
    granted = _pulsar("GET", f"namespaces/{NS}")["auth_policies"]
    assert granted["destination_auth"][f"persistent://{NS}/{topic}"] == {"dave": ["consume"]}
    assert granted["subscription_auth_roles"]["kafka-group-dave-group"] == ["dave"]
    listed = _acls(secure, config, "--list", "--topic", topic)
    assert "principal=User:dave" in listed.stdout and "operation=READ" in listed.stdout, listed
    # what Pulsar cannot hold is refused, and says why
    denied = _acls(secure, config, "--add", "--deny-principal", "User:dave",
                   "--operation", "Write", "--topic", topic)  # fmt: skip
    assert "no DENY" in denied.stdout + denied.stderr
    removed = _acls(secure, config, "--remove", "--force", "--allow-principal", "User:dave",
                    "--operation", "Read", "--topic", topic)  # fmt: skip
    assert removed.returncode == 0, removed.stdout + removed.stderr
    after = _pulsar("GET", f"namespaces/{NS}")["auth_policies"]["destination_auth"]
    assert not after.get(f"persistent://{NS}/{topic}")
    # a role that is no tenant admin may not read the ACLs
    alice = tmp_path / "alice.properties"
    alice.write_text(config.read_text().replace(token, secure.keys.token("alice")))
    refused = _acls(secure, alice, "--list")
    assert "ClusterAuthorizationException" in refused.stdout + refused.stderr, refused
