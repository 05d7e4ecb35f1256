"""kop on a Pulsar cluster shaped like production (issue 19): two brokers behind a
proxy, token authentication, authorization, TLS, Pulsar's broker defaults. kop
reaches it through the proxy in some tests and straight at both brokers in others,
as the application role, which is an admin of its tenant and nothing more."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.cluster.cluster_admin import PARTITIONS, SPREAD_ATTEMPTS, create_partitioned, owners
from tests.cluster.conftest import PulsarCluster
from tests.integration.conftest import KopProcess

pytestmark = pytest.mark.timeout(1200)


def kop_env(c: PulsarCluster, *, via: str = "proxy", role: str | None = None) -> dict[str, str]:
    """kop's settings for this cluster: TLS with its CA, the role's token file."""
    if via == "proxy":
        service, http = c.proxy.service_url_tls, c.proxy.http_url_tls
    else:  # both brokers, tried in turn
        service = "pulsar+ssl://" + ",".join(b.service_url_tls.split("://")[1] for b in c.brokers)
        http = "https://" + ",".join(b.http_url_tls.split("://")[1] for b in c.brokers)
    tenant, namespace = c.app_namespace.split("/")
    env = {
        "KOP_PULSAR_SERVICE_URL": service,
        "KOP_PULSAR_HTTP_URL": http,
        "KOP_PULSAR_TLS_TRUST_CERTS_FILE": str(c.ca_cert),
        "KOP_TENANT": tenant,
        "KOP_NAMESPACE": namespace,
        "KOP_SYSTEM_NAMESPACE": c.system_namespace,
    }
    role = role if role is not None else c.app_role
    if role:
        env["KOP_PULSAR_AUTH_PLUGIN"] = "token"
        env["KOP_PULSAR_AUTH_PARAMS"] = f"file://{c.token_files[role]}"
    return env


@pytest.fixture
def kop_via_proxy(pulsar_cluster: PulsarCluster, tmp_path: Path) -> Iterator[KopProcess]:
    gateway = KopProcess(tmp_path, **kop_env(pulsar_cluster, via="proxy"))
    gateway.start(timeout=120)
    yield gateway
    gateway.stop()


def spread_topic(c: PulsarCluster) -> str:
    """A 4-partition topic whose partitions both brokers own (asserted, not hoped)."""
    for _ in range(SPREAD_ATTEMPTS):
        topic = f"spread-{uuid.uuid4().hex[:10]}"
        create_partitioned(c, topic)
        if len(set(owners(c, topic))) == 2:
            return topic
    pytest.fail(f"no topic of {SPREAD_ATTEMPTS} had partitions on both brokers")


def produce(bootstrap: str, topic: str, values: list[bytes], **conf: object) -> dict[bytes, int]:
    """Idempotent, acks=all; the offset each value was acknowledged at."""
    acked: dict[bytes, int] = {}
    errors: list[str] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            acked[msg.value()] = msg.offset()  # type: ignore[attr-defined]

    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", **conf}
    )
    for i, value in enumerate(values):
        producer.produce(topic, value, key=str(i).encode(), on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(120) == 0
    assert errors == []
    return acked


def read_all(bootstrap: str, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """Every partition from offset 0 to its end: (offset, value)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    out: dict[int, list[tuple[int, bytes]]] = {}
    for p in range(PARTITIONS):
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        consumer.assign([TopicPartition(topic, p, 0)])
        got: list[tuple[int, bytes]] = []
        while len(got) < high:
            msg = consumer.poll(10)
            assert msg is not None, f"partition {p}: {len(got)} of {high} read"
            if msg.error():
                raise KafkaException(msg.error())
            got.append((msg.offset(), msg.value()))
        out[p] = got
    consumer.close()
    return out


def assert_each_once_at_dense_offsets(
    log: dict[int, list[tuple[int, bytes]]], acked: set[bytes]
) -> None:
    for p, records in log.items():
        assert [o for o, _ in records] == list(range(len(records))), f"gap in partition {p}"
    stored = [v for records in log.values() for _, v in records]
    assert len(stored) == len(set(stored)), "a record stored twice"
    assert acked <= set(stored), f"{len(acked - set(stored))} acknowledged records lost"


def test_a_round_trip_through_the_proxy_over_tls_on_partitions_of_both_brokers(
    pulsar_cluster: PulsarCluster, kop_via_proxy: KopProcess
) -> None:
    topic = spread_topic(pulsar_cluster)
    values = [f"v{i}".encode() for i in range(1000)]
    acked = produce(kop_via_proxy.bootstrap, topic, values)
    assert len(acked) == 1000
    log = read_all(kop_via_proxy.bootstrap, topic)
    assert_each_once_at_dense_offsets(log, set(values))
    assert all(log[p] for p in range(PARTITIONS))


def test_straight_at_both_brokers_with_a_service_url_of_two_hosts(
    pulsar_cluster: PulsarCluster, tmp_path: Path
) -> None:
    gateway = KopProcess(tmp_path, **kop_env(pulsar_cluster, via="brokers"))
    gateway.start(timeout=120)
    try:
        topic = spread_topic(pulsar_cluster)
        values = [f"d{i}".encode() for i in range(400)]
        produce(gateway.bootstrap, topic, values)
        assert_each_once_at_dense_offsets(read_all(gateway.bootstrap, topic), set(values))
    finally:
        gateway.stop()


def _start_fails(c: PulsarCluster, tmp_path: Path, env: dict[str, str]) -> list[str]:
    """kop's exit on a cluster that will not have it: its error lines."""
    gateway = KopProcess(tmp_path, **env)
    proc = subprocess.run(
        [sys.executable, "-m", "kop.cli", "serve"],
        env=gateway.env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode != 0
    return [line for line in proc.stderr.splitlines() if line.startswith("Error:")]


def test_a_role_without_the_tenant_admin_right_gets_one_line_naming_it(
    pulsar_cluster: PulsarCluster, tmp_path: Path
) -> None:
    c = pulsar_cluster
    errors = _start_fails(c, tmp_path, kop_env(c, role=c.limited_role))
    assert len(errors) == 1, errors
    # Pulsar says 401 here, with "Unauthorized to validateTenantOperation": a known
    # role refused, not refused credentials.
    line = errors[0]
    assert f"kop's role may not list the namespaces of tenant '{c.app_tenant}'" in line
    assert "LIST_NAMESPACES" in line
    assert f"pulsar-admin tenants update {c.app_tenant} --admin-roles" in line


def test_no_credentials_is_one_line_at_once(pulsar_cluster: PulsarCluster, tmp_path: Path) -> None:
    errors = _start_fails(pulsar_cluster, tmp_path, kop_env(pulsar_cluster, role=""))
    assert len(errors) == 1, errors
    assert "refused kop's credentials (401)" in errors[0]
