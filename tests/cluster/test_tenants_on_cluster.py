"""Two tenants' Kafka clients through one kop, on the Pulsar cluster with token
authentication and authorization (issue 22): each signs in over SASL_SSL with a
token of its own role (signed with the key Pulsar's brokers check), works in its
own tenant, and can neither see, read, write, delete, commit offsets for nor join
groups on the other's topics; wrong, expired and unsigned tokens are refused."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.cluster.cluster_admin import http
from tests.cluster.conftest import PulsarCluster
from tests.cluster.test_kop_on_cluster import kop_env
from tests.integration.conftest import KopProcess, free_port
from tests.tls_material import Ca

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[2]
REFUSED = KafkaError.TOPIC_AUTHORIZATION_FAILED


@dataclass
class Tenants:
    kop: KopProcess
    port: int
    ca: Ca
    secret: bytes
    names: dict[str, str]  # "a"/"b" -> tenant/namespace

    def token(self, role: str, **claims: Any) -> str:
        return jwt.encode({"sub": role, **claims}, self.secret, algorithm="HS256")

    def conf(self, who: str, token: str | None = None, **extra: Any) -> dict[str, Any]:
        return {
            "bootstrap.servers": f"localhost:{self.port}",
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(self.ca.cert_file),
            "sasl.mechanisms": "PLAIN",
            "sasl.username": self.names[who],
            "sasl.password": "token:" + (token or self.token(f"user-{who}-{self.suffix}")),
            "socket.timeout.ms": 15000,
            **extra,
        }

    @property
    def suffix(self) -> str:
        return self.names["a"].split("/")[0].rsplit("-", 1)[1]


def _admin(c: PulsarCluster, method: str, path: str, body: object = None) -> None:
    url = f"{c.brokers[0].http_url}/admin/v2/{path}"
    status, text = http(c, method, url, c.token(c.superuser), body)
    assert status in (200, 204), (method, path, status, text)


@pytest.fixture(scope="module")
def tenants(
    pulsar_cluster: PulsarCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tenants]:
    c = pulsar_cluster
    suffix = uuid.uuid4().hex[:6]
    names = {}
    for who in ("a", "b"):
        tenant = f"tenant-{who}-{suffix}"
        _admin(
            c, "PUT", f"tenants/{tenant}", {"adminRoles": [c.app_role], "allowedClusters": [c.name]}
        )
        _admin(c, "PUT", f"namespaces/{tenant}/apps", {})
        role = f"user-{who}-{suffix}"
        _admin(c, "POST", f"namespaces/{tenant}/apps/permissions/{role}", ["produce", "consume"])
        names[who] = f"{tenant}/apps"
    base = tmp_path_factory.mktemp("tenants")
    ca = Ca.make(base / "ca")
    cert, key = ca.issue("kop", "localhost", server=True)
    secret_file = c.token_files[c.superuser].parent / "token-secret.key"
    kop = KopProcess(base, **kop_env(c))
    port = free_port()
    kop.env.update(
        KOP_LISTENERS=f"PLAINTEXT://127.0.0.1:{kop.port},SASL_SSL://127.0.0.1:{port}",
        KOP_ADVERTISED_LISTENERS=f"PLAINTEXT://localhost:{kop.port},SASL_SSL://localhost:{port}",
        KOP_AUTH_TOKEN_SECRET_KEY=f"file://{secret_file}",
        KOP_SSL_CERT_FILE=str(cert),
        KOP_SSL_KEY_FILE=str(key),
        KOP_AUTHORIZATION_REFRESH_S="2",
        KOP_SASL_ENABLED_MECHANISMS="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        KOP_SUPERUSER_ROLES=f"ops-{suffix}",
    )
    scram_user = f"scram-{suffix}"  # works in kop's default namespace (the app's)
    _admin(c, "POST", f"namespaces/{c.app_namespace}/permissions/{scram_user}",
           ["produce", "consume"])  # fmt: skip
    kop.start(timeout=120)
    try:
        yield Tenants(kop, port, ca, secret_file.read_bytes(), names)
    finally:
        kop.stop()


def produce(conf: dict[str, Any], topic: str, n: int) -> list[int]:
    codes: list[int] = []

    def done(error: Any, _msg: Any) -> None:
        codes.append(error.code() if error else 0)

    producer = Producer({**conf, "message.timeout.ms": 20000, "retries": 0})
    for i in range(n):
        producer.produce(topic, f"v{i}".encode(), on_delivery=done)
    producer.flush(40)
    return codes


def consume(conf: dict[str, Any], topic: str, group: str, want: int) -> tuple[list[str], int]:
    """(values read, first error code or 0), committing what was read."""
    consumer = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    seen: list[str] = []
    error = 0
    deadline = time.monotonic() + 60
    try:
        while len(seen) < want and not error and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                error = msg.error().code()
            else:
                seen.append(msg.value().decode())
        if seen:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen, error


def metadata_error(conf: dict[str, Any], topic: str) -> int:
    admin = AdminClient(conf)
    error = admin.list_topics(topic=topic, timeout=20).topics[topic].error
    return error.code() if error else 0


def commit_error(conf: dict[str, Any], topic: str, group: str) -> int:
    consumer = Consumer({**conf, "group.id": group})
    try:
        done = consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        return int(done[0].error.code()) if done and done[0].error else 0
    except Exception as exc:
        return int(exc.args[0].code())
    finally:
        consumer.close()


def delete_error(conf: dict[str, Any], topic: str) -> int:
    admin = AdminClient(conf)
    try:
        admin.delete_topics([topic])[topic].result(timeout=20)
    except Exception as exc:
        return int(exc.args[0].code())
    return 0


def auth_error(conf: dict[str, Any]) -> int:
    errors: list[KafkaError] = []
    admin = AdminClient({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        admin.poll(0.25)
    return errors[0].code() if errors else 0


def test_each_tenant_works_in_its_own_and_cannot_touch_the_others(tenants: Tenants) -> None:
    a, b = tenants.conf("a"), tenants.conf("b")
    assert produce(a, "orders", 5) == [0] * 5
    assert produce(b, "orders", 3) == [0] * 3  # the same name: b's own topic
    assert consume(a, "orders", "g", 5) == ([f"v{i}" for i in range(5)], 0)
    assert consume(b, "orders", "g", 3) == ([f"v{i}" for i in range(3)], 0)
    theirs = f"persistent://{tenants.names['a']}/orders"
    missing = f"persistent://{tenants.names['a']}/no-such-topic"
    # b cannot see, write, read, commit on or delete a's topics; a topic of a's that
    # does not exist is refused exactly alike
    assert "orders" in AdminClient(b).list_topics(timeout=20).topics
    assert theirs not in AdminClient(b).list_topics(timeout=20).topics
    assert metadata_error(b, theirs) == REFUSED
    assert metadata_error(b, missing) == REFUSED
    assert produce(b, theirs, 1) == [REFUSED]
    seen, error = consume(b, theirs, "g", 1)
    assert (seen, error) == ([], REFUSED)
    assert commit_error(b, theirs, "g") == REFUSED
    assert delete_error(b, theirs) == REFUSED
    # a's group g is untouched by b's group g: it resumes where a committed
    assert consume(a, "orders", "g", 1) == ([], 0)


def test_refused_tokens(tenants: Tenants) -> None:
    role = f"user-a-{tenants.suffix}"
    wrong_key = jwt.encode({"sub": role}, b"w" * 32, algorithm="HS256")
    unsigned = jwt.encode({"sub": role}, None, algorithm="none")
    expired = tenants.token(role, exp=int(time.time()) - 60)
    for token in (wrong_key, unsigned, expired):
        assert auth_error(tenants.conf("a", token)) == KafkaError._AUTHENTICATION
    # a valid token of a role with no permission in the tenant it names
    stranger = tenants.conf("a", tenants.token("stranger"))
    assert produce(stranger, "orders", 1) == [REFUSED]


def test_a_scram_user_made_with_kafka_configs_signs_in(tenants: Tenants, tmp_path: Path) -> None:
    ops = tmp_path / "ops.properties"
    token = tenants.token(f"ops-{tenants.suffix}")  # a superuser of kop (KOP_SUPERUSER_ROLES)
    ops.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{tenants.names["a"]}" password="token:{token}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={tenants.ca.cert_file}\n"
    )
    user = f"scram-{tenants.suffix}"
    made = subprocess.run(
        [sys.executable, str(REPO / "tools" / "kafka.py"), "tool", "configs",
         "--bootstrap-server", f"localhost:{tenants.port}", "--command-config", str(ops),
         "--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=s3cret]",
         "--entity-type", "users", "--entity-name", user],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    scram = {**tenants.conf("a"), "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": user,
             "sasl.password": "s3cret"}  # fmt: skip
    assert produce(scram, "scram-topic", 3) == [0, 0, 0]
    assert consume(scram, "scram-topic", "scram-group", 3) == (["v0", "v1", "v2"], 0)
    wrong = {**scram, "sasl.password": "nope"}
    assert auth_error(wrong) == KafkaError._AUTHENTICATION
