"""kop on a Pulsar cluster shaped like production (issue 19): two brokers behind a
proxy, token authentication, authorization, TLS, Pulsar's broker defaults. kop
reaches it through the proxy in some tests and straight at both brokers in others,
as the application role, which is an admin of its tenant and nothing more."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kop.cluster import rendezvous
from tests.cluster.cluster_admin import (
    PARTITIONS,
    create_partitioned,
    http,
    spread_over_both_brokers,
)
from tests.cluster.conftest import TOOL as CLUSTER_TOOL
from tests.cluster.conftest import PulsarCluster
from tests.integration.admin import create_topic
from tests.integration.conftest import KopProcess
from tests.integration.observe import metric
from tests.integration.workload import PARTITIONS as WORKLOAD_PARTITIONS
from tests.integration.workload import Writer

pytestmark = pytest.mark.timeout(1200)
REPO = Path(__file__).resolve().parents[2]


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
    """A 4-partition topic whose partitions both brokers own (placed, not hoped)."""
    topic = f"spread-{uuid.uuid4().hex[:10]}"
    create_partitioned(c, topic)
    spread_over_both_brokers(c, topic)
    return topic


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
    log: dict[int, list[tuple[int, bytes]]], acked: set[bytes], gateway: KopProcess | None = None
) -> None:
    for p, records in log.items():
        assert [o for o, _ in records] == list(range(len(records))), f"gap in partition {p}"
    stored = [v for records in log.values() for _, v in records]
    assert len(stored) == len(set(stored)), stored_twice(log, gateway)
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
        [sys.executable, "-m", "kop.cli.main", "serve"],
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


# --------------------------------------------------------------- ownership changes


class GroupReader(threading.Thread):
    """A consumer group member reading and committing (synchronously, every 200
    records) while brokers come and go; commits that fail are tried at the next."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 45000,
            }
        )
        self.consumer.subscribe([topic])
        self.topic = topic
        self.seen: set[bytes] = set()
        self.failed_commits = 0
        self.want: set[bytes] | None = None
        self.stop_at = time.monotonic() + 600
        self.done = threading.Event()

    def run(self) -> None:
        uncommitted = 0
        try:
            while time.monotonic() < self.stop_at:
                if self.want is not None and self.want <= self.seen and uncommitted == 0:
                    return
                msg = self.consumer.poll(1.0)
                if msg is not None and not msg.error():
                    self.seen.add(msg.value())
                    uncommitted += 1
                if uncommitted >= 200 or (msg is None and uncommitted):
                    try:
                        self.consumer.commit(asynchronous=False)
                        uncommitted = 0
                    except KafkaException:
                        self.failed_commits += 1
        finally:
            self.done.set()

    def finish(
        self, want: set[bytes], timeout: float = 300, at: dict[bytes, tuple[int, int]] | None = None
    ) -> None:
        """Waits until the group read `want`; `at` (value -> partition and offset it was
        acknowledged at) lets a failure say where the missing records are."""
        self.want = want
        self.join(timeout)
        if self.is_alive():  # where it waits says whose fault it is
            frame = sys._current_frames().get(self.ident or 0)
            where = "".join(traceback.format_stack(frame)[-4:]) if frame else "?"
            pytest.fail(
                f"the group read {len(self.seen & want)} of {len(want)}, at:\n{where}\n"
                + self._missing(want, at or {})
            )
        self.consumer.close()

    def _missing(self, want: set[bytes], at: dict[bytes, tuple[int, int]]) -> str:
        """The unread records' partitions and offsets, beside what kop reports of those
        partitions (watermarks) and of the group (its position and commits)."""
        missing = sorted(at.get(v, (-1, -1)) for v in want - self.seen)
        lines = [f"unread (partition, offset): {missing[:20]}"]
        for p in sorted({p for p, _ in missing if p >= 0}):
            tp = TopicPartition(self.topic, p)
            try:
                low, high = self.consumer.get_watermark_offsets(tp, timeout=10)
                position = self.consumer.position([tp])[0].offset
                committed = self.consumer.committed([tp], timeout=10)[0].offset
            except KafkaException as exc:
                lines.append(f"partition {p}: {exc}")
                continue
            lines.append(
                f"partition {p}: watermarks {low}..{high}, group position {position}, "
                f"committed {committed}"
            )
        return "\n".join(lines)


def assert_group_resumes_at_the_end(bootstrap: str, topic: str, group: str) -> None:
    """A member that starts after everything was read and committed gets nothing
    again: the committed offsets are the partitions' ends."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    committed = consumer.committed(parts, timeout=60)
    ends = [consumer.get_watermark_offsets(tp, timeout=30)[1] for tp in parts]
    # A partition nobody wrote to has no commit (-1001, as with Kafka): its end is 0.
    assert [max(tp.offset, 0) for tp in committed] == ends
    consumer.close()


def broker_pid(c: PulsarCluster, name: str) -> int:
    return int((c.data_dir / name / f"{name}.pid").read_text().split()[0])


def wait_until(what: str, check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        time.sleep(0.5)


def verifiable_producer(bootstrap: str, topic: str, n: int, config: Path) -> subprocess.Popen[str]:
    config.write_text(
        "enable.idempotence=true\nacks=all\nretries=2147483647\n"
        "delivery.timeout.ms=240000\nrequest.timeout.ms=30000\nmax.block.ms=120000\n"
    )
    return subprocess.Popen(
        [sys.executable, str(REPO / "tools" / "kafka.py"), "tool", "verifiable-producer",
         "--bootstrap-server", bootstrap, "--topic", topic, "--max-messages", str(n),
         "--throughput", "150", "--acks", "-1", "--producer.config", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def producer_events(
    proc: subprocess.Popen[str], on_line: Callable[[int], None]
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("{"):
            events.append(json.loads(line))
            on_line(sum(1 for e in events if e.get("name") == "producer_send_success"))
    assert proc.wait(300) == 0
    return events


def test_a_broker_killed_and_restarted_under_an_idempotent_producer_and_a_group(
    pulsar_cluster: PulsarCluster, kop_via_proxy: KopProcess, tmp_path: Path
) -> None:
    c = pulsar_cluster
    topic, group, n = spread_topic(c), f"g-{uuid.uuid4().hex[:8]}", 6000
    reader = GroupReader(kop_via_proxy.bootstrap, topic, group)
    reader.start()
    producer = verifiable_producer(kop_via_proxy.bootstrap, topic, n, tmp_path / "p.props")
    killed: list[int] = []

    def kill_at_a_quarter(acked: int) -> None:
        if acked >= n // 4 and not killed:
            pid = broker_pid(c, "broker-2")
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    try:
        events = producer_events(producer, kill_at_a_quarter)
    finally:  # broker-2 back, also when this test fails: the next tests need both
        restart = subprocess.run([*CLUSTER_TOOL, "start", "--auth", "--tls"],
                                 capture_output=True, text=True, timeout=600)  # fmt: skip
    assert restart.returncode == 0, restart.stdout + restart.stderr
    assert killed, "the producer finished before a quarter was acknowledged"
    sent = [e for e in events if e.get("name") == "producer_send_success"]
    errors = [e for e in events if e.get("name") == "producer_send_error"]
    assert not [e for e in errors if "OutOfOrderSequence" in str(e.get("exception"))]
    assert errors == [] and len(sent) == n, send_failures(errors, kop_via_proxy, topic)
    acked = {str(e["value"]).encode() for e in sent}
    reader.finish(acked, at={str(e["value"]).encode(): (e["partition"], e["offset"]) for e in sent})
    # kop restarted too (its offset index may have missed writes while broker-2 was
    # gone, issue 19 finding 6): every record keeps the offset it was acknowledged at.
    kop_via_proxy.stop()
    kop_via_proxy.start(timeout=120)
    log = read_all(kop_via_proxy.bootstrap, topic)
    assert_each_once_at_dense_offsets(log, acked, kop_via_proxy)
    for e in sent:  # the offset each acknowledgement named is where the record is
        if e["offset"] >= 0:  # -1: a retry answered DUPLICATE_SEQUENCE_NUMBER (no offset)
            assert log[e["partition"]][e["offset"]][1] == str(e["value"]).encode()
    assert_group_resumes_at_the_end(kop_via_proxy.bootstrap, topic, group)


def stored_twice(log: dict[int, list[tuple[int, bytes]]], gateway: KopProcess | None) -> str:
    """Which records are there twice, where, and what kop logged of their partitions
    (its answers of a sequence out of order name the producer's id, epoch and
    sequences): enough to tell a client's re-sequenced retry from kop's misjudgement."""
    where: dict[bytes, list[tuple[int, int]]] = {}
    for p, records in log.items():
        for offset, value in records:
            where.setdefault(value, []).append((p, offset))
    twice = {v: at for v, at in where.items() if len(at) > 1}
    lines = [f"{len(twice)} records stored twice, e.g. {list(twice.items())[:5]}"]
    if gateway is not None:
        parts = {p for at in twice.values() for p, _ in at}
        logged = [line for line in gateway.log_text().splitlines()
                  if any(f"-partition-{p}" in line for p in parts)]  # fmt: skip
        lines += ["kop's log of their partitions (last 60 lines):", *logged[-60:]]
    return "\n".join(lines)


def send_failures(errors: list[dict[str, Any]], gateway: KopProcess, topic: str) -> str:
    """What failed, per partition, and what kop logged of those partitions: enough
    to tell a stuck partition from a slow broker when it fails in CI."""
    by_partition: dict[int, list[dict[str, Any]]] = {}
    for e in errors:  # the partition is named only in the message: "... for t-3:..."
        named = re.search(rf"{topic}-(\d+)", str(e.get("message")))
        by_partition.setdefault(int(named.group(1)) if named else -1, []).append(e)
    lines = [
        f"partition {p}: {len(es)} failed sends, first {es[0].get('message', '')[:160]!r}"
        for p, es in sorted(by_partition.items())
    ]
    names = [f"{topic}-partition-{p}" for p in by_partition] or [topic]
    logged = [line for line in gateway.log_text().splitlines()
              if " DEBUG " not in line and any(n in line for n in names)]  # fmt: skip
    return "\n".join([*lines, "kop's log of them (last 60 lines):", *logged[-60:]])


def bundle_of(c: PulsarCluster, topic: str) -> str:
    status, body = http(
        c, "GET", f"{c.brokers[0].http_url}/lookup/v2/topic/persistent/{c.app_namespace}/"
        f"{topic}-partition-0/bundle", c.token(c.superuser),
    )  # fmt: skip
    assert status == 200, (status, body)
    return body.strip().strip('"')


def test_unload_and_bundle_split_under_an_idempotent_producer_and_a_group(
    pulsar_cluster: PulsarCluster, kop_via_proxy: KopProcess
) -> None:
    c = pulsar_cluster
    topic, group, n = spread_topic(c), f"g-{uuid.uuid4().hex[:8]}", 5000
    reader = GroupReader(kop_via_proxy.bootstrap, topic, group)
    reader.start()
    values = [f"u{i}".encode() for i in range(n)]
    acked: dict[bytes, int] = {}
    producing = threading.Thread(
        target=lambda: acked.update(
            produce(kop_via_proxy.bootstrap, topic, values, **{"linger.ms": 5})
        )
    )
    base = f"{c.brokers[0].http_url}/admin/v2"
    token = c.token(c.superuser)  # the operator unloads and splits, not kop
    producing.start()
    wait_until("a fifth acknowledged", lambda: len(reader.seen) >= n // 5, 120)
    status, body = http(c, "PUT", f"{base}/persistent/{c.app_namespace}/{topic}/unload", token)
    assert status == 204, (status, body)
    bundle = bundle_of(c, topic)
    status, body = http(
        c, "PUT", f"{base}/namespaces/{c.app_namespace}/{bundle}/split?unload=true", token
    )
    assert status == 204, (status, body)
    producing.join(300)
    assert not producing.is_alive() and len(acked) == n
    reader.finish(set(values))
    log = read_all(kop_via_proxy.bootstrap, topic)
    assert_each_once_at_dense_offsets(log, set(values))
    assert_group_resumes_at_the_end(kop_via_proxy.bootstrap, topic, group)


def _live(node: KopProcess) -> list[int]:
    url = f"http://127.0.0.1:{node.admin_port}/v1/instances"
    with urllib.request.urlopen(url, timeout=5) as resp:
        return [i["node_id"] for i in json.loads(resp.read())["instances"]]


def _led_by_both(c: PulsarCluster, node_ids: tuple[int, int]) -> str:
    """A topic name whose partitions the two instances split (rendezvous by partition
    name; with a random name, about 1 run in 32 put all 6 on one instance)."""
    while True:
        topic = f"two-{uuid.uuid4().hex[:8]}"
        keys = [f"persistent://{c.app_namespace}/{topic}-partition-{p}"
                for p in range(WORKLOAD_PARTITIONS)]  # fmt: skip
        if len({rendezvous.owner(k, node_ids) for k in keys}) == 2:
            return topic


def test_two_kop_instances_through_the_proxy_one_killed_loses_nothing(
    pulsar_cluster: PulsarCluster, tmp_path: Path
) -> None:
    """Issue 21 where our users run it: two kop instances coordinate through the
    authenticated, TLS, two-broker Pulsar behind its proxy (membership, ownership,
    fences), a producer and a group through them; kill -9 of one: the other serves
    its partitions within the bound, nothing acknowledged is lost or stored twice,
    and a group reads all of it."""
    c = pulsar_cluster
    env = kop_env(c, via="proxy")
    nodes = {n: KopProcess(tmp_path, **env, KOP_NODE_ID=str(n)) for n in (1, 2)}
    try:
        for node in nodes.values():
            node.start(timeout=120)
        deadline = time.monotonic() + 30
        while any(_live(n) != [1, 2] for n in nodes.values()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [_live(n) for n in nodes.values()] == [[1, 2], [1, 2]]
        topic = _led_by_both(c, (1, 2))
        create_topic(nodes[1].bootstrap, topic, partitions=WORKLOAD_PARTITIONS)
        leaders = {
            p: part.leader
            for p, part in AdminClient({"bootstrap.servers": nodes[1].bootstrap})
            .list_topics(topic, timeout=30)
            .topics[topic]
            .partitions.items()
        }
        orphaned = [p for p, leader in leaders.items() if leader == 2]
        assert orphaned and len(orphaned) < len(leaders), leaders  # both lead some
        with Writer(nodes[1].bootstrap, topic) as writer:
            writer.mark()
            writer.until_served(list(leaders))  # under load when it dies
            nodes[2].kill9()
            writer.mark()
            writer.until_served(orphaned)
        assert set(orphaned) <= set(writer.served_again), (writer.served_again, orphaned)
        assert max(writer.served_again[p] for p in orphaned) < 10.0, writer.served_again
        writer.check(nodes[1].bootstrap, f"g-{topic}")
    finally:
        for node in nodes.values():
            node.stop()


def test_a_native_producers_chunked_message_reaches_a_kafka_consumer_whole(
    pulsar_cluster: PulsarCluster, kop_via_proxy: KopProcess
) -> None:
    """Pulsar's own client, chunking on, through the proxy over TLS: a 7 MiB message
    is two chunks (the broker's maxMessageSize is Pulsar's default 5 MiB) and one
    Kafka record, between two small ones."""
    import pulsar

    c = pulsar_cluster
    topic = f"chunked-{uuid.uuid4().hex[:10]}"
    client = pulsar.Client(
        c.proxy.service_url_tls,
        authentication=pulsar.AuthenticationToken(c.token(c.app_role)),
        tls_trust_certs_file_path=str(c.ca_cert),
        operation_timeout_seconds=30,
    )
    big = os.urandom(7 << 20)
    try:
        producer = client.create_producer(
            f"persistent://{c.app_namespace}/{topic}",
            chunking_enabled=True,
            batching_enabled=False,
            send_timeout_millis=120_000,
        )
        for value in (b"before", big, b"after"):
            producer.send(value)
        producer.close()
    finally:
        client.close()
    consumer = Consumer(
        {"bootstrap.servers": kop_via_proxy.bootstrap, "group.id": f"c-{uuid.uuid4().hex[:8]}",
         "auto.offset.reset": "earliest", "fetch.message.max.bytes": 16 << 20}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 120
    while len(got) < 3 and time.monotonic() < deadline:
        msg = consumer.poll(5)
        if msg is not None and not msg.error():
            got.append((msg.offset(), msg.value()))
    consumer.close()
    assert [o for o, _ in got] == [0, 1, 2]
    assert got[0][1] == b"before" and got[2][1] == b"after"
    assert got[1][1] == big


class Issuer(ThreadingHTTPServer):
    """An OAuth2 authorization server for the client-credentials flow, minting the
    JWTs the cluster's brokers accept (HS256 with the cluster's secret key) for the
    application role: what an operator's identity provider does for Pulsar."""

    def __init__(self, secret: bytes, role: str) -> None:
        self.secret, self.role = secret, role
        self.grants: list[dict[str, str]] = []
        super().__init__(("127.0.0.1", 0), _IssuerHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def token(self) -> str:
        def b64(raw: bytes) -> str:
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

        claims = {"sub": self.role, "exp": int(time.time()) + 3600}
        head = b64(b'{"alg":"HS256"}') + "." + b64(json.dumps(claims).encode())
        signature = hmac.new(self.secret, head.encode(), hashlib.sha256).digest()
        return f"{head}.{b64(signature)}"


class _IssuerHandler(BaseHTTPRequestHandler):
    server: Issuer

    def do_GET(self) -> None:
        self._json({"token_endpoint": f"{self.server.url}/oauth/token"})

    def do_POST(self) -> None:
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        grant = {k: v[0] for k, v in form.items()}
        self.server.grants.append(grant)
        if (grant.get("client_id"), grant.get("client_secret")) != ("kop", "kop-secret"):
            self._json({"error": "invalid_client"}, 401)
            return
        self._json({"access_token": self.server.token(), "expires_in": 3600})

    def _json(self, body: object, status: int = 200) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_oauth2_client_credentials_through_the_proxy(
    pulsar_cluster: PulsarCluster, tmp_path: Path
) -> None:
    c = pulsar_cluster
    issuer = Issuer((c.data_dir / "security" / "token-secret.key").read_bytes(), c.app_role)
    creds = tmp_path / "credentials.json"
    creds.write_text(json.dumps({"client_id": "kop", "client_secret": "kop-secret"}))
    params = {"issuerUrl": issuer.url, "privateKey": f"file://{creds}", "audience": "urn:pulsar"}
    env = kop_env(c, via="proxy", role="")
    env |= {"KOP_PULSAR_AUTH_PLUGIN": "oauth2", "KOP_PULSAR_AUTH_PARAMS": json.dumps(params)}
    gateway = KopProcess(tmp_path, **env)
    gateway.start(timeout=120)
    try:
        topic = spread_topic(c)
        values = [f"o{i}".encode() for i in range(200)]
        produce(gateway.bootstrap, topic, values)
        assert_each_once_at_dense_offsets(read_all(gateway.bootstrap, topic), set(values))
    finally:
        gateway.stop()
        issuer.shutdown()
    assert issuer.grants and issuer.grants[0]["grant_type"] == "client_credentials"
    assert issuer.grants[0]["audience"] == "urn:pulsar"
    assert "kop-secret" not in gateway.log_text()


def test_compacted_topic_is_compacted_on_both_brokers_through_the_proxy(
    pulsar_cluster: PulsarCluster, tmp_path: Path
) -> None:
    """kop's compaction cycle (D10) as the application role through the proxy: Pulsar
    compacts partitions owned by either broker (the admin calls are redirected to the
    owner), kop notes the survivors, and nothing fails."""
    env = {**kop_env(pulsar_cluster, via="proxy"), "KOP_COMPACTION_INTERVAL_S": "1"}
    gateway = KopProcess(tmp_path, **env)
    gateway.start(timeout=120)
    try:
        admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
        topic = f"compacted-{uuid.uuid4().hex[:10]}"
        new = NewTopic(topic, PARTITIONS, 1, config={"cleanup.policy": "compact"})
        admin.create_topics([new])[topic].result(60)
        spread_over_both_brokers(pulsar_cluster, topic)
        values = [f"c{i}".encode() for i in range(400)]  # keys 0..399: one record each
        produce(gateway.bootstrap, topic, values)
        deadline = time.monotonic() + 120
        while (metric(gateway, "kop_compactions_total") or 0) < PARTITIONS:
            assert time.monotonic() < deadline, gateway.log_text()[-3000:]
            time.sleep(0.5)
        assert (metric(gateway, "kop_compaction_failures_total") or 0) == 0
        assert_each_once_at_dense_offsets(read_all(gateway.bootstrap, topic), set(values))
    finally:
        gateway.stop()
