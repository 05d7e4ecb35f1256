"""Two tenants' Kafka clients through one kop on the Pulsar cluster with token
authentication and authorization (issues 22 and 33): the kop, the tenants, and the
client calls the tenant tests share. Each tenant `a`/`b` has its own Pulsar tenant
with a namespace `apps`, a role that may produce and consume there, and an
admin role of its tenant; kop serves PLAINTEXT (anonymous, no grants) and SASL_SSL."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.cluster.cluster_admin import http
from tests.cluster.conftest import PulsarCluster
from tests.cluster.test_kop_on_cluster import kop_env
from tests.integration.conftest import KopProcess, free_port
from tests.tls_material import Ca

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


# The per-tenant and per-address bounds, set low enough that the hostile tenant reaches
# each of them within seconds (tests/cluster/test_hostile_tenant.py).
LIMITS = {
    "KOP_MAX_GROUPS_PER_TENANT": "40",
    "KOP_MAX_TRANSACTIONAL_IDS_PER_TENANT": "40",
    "KOP_MAX_CONNECTIONS_PER_IP": "60",
    "KOP_CONNECTION_SETUP_TIMEOUT_S": "3",
}


def serve_tenants(c: PulsarCluster, base: Path) -> Iterator[Tenants]:
    """kop in front of the cluster with tenants a and b made for it; stopped after."""
    suffix = uuid.uuid4().hex[:6]
    names = {}
    for who in ("a", "b"):
        tenant = f"tenant-{who}-{suffix}"
        admins = [c.app_role, f"admin-{who}-{suffix}"]  # and a role of the tenant's own
        _admin(c, "PUT", f"tenants/{tenant}", {"adminRoles": admins, "allowedClusters": [c.name]})
        _admin(c, "PUT", f"namespaces/{tenant}/apps", {})
        role = f"user-{who}-{suffix}"
        _admin(c, "POST", f"namespaces/{tenant}/apps/permissions/{role}", ["produce", "consume"])
        names[who] = f"{tenant}/apps"
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
        **LIMITS,
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
