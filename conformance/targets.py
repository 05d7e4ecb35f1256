"""The two brokers every scenario runs against: a kop gateway (over the local
Pulsar from tools/pulsar.py) and the reference Apache Kafka from tools/kafka.py.
Each is reused when already running, otherwise started here and stopped after.

With `instances` > 1 both are clusters: that many kop processes sharing one system
namespace (docs/decisions.md D15), judged by a Kafka of as many brokers
(`tools/kafka.py start --brokers N`). Clients get one address, the first node's, as
a one-entry bootstrap list: they find the other brokers and each partition's leader
from Metadata, which is part of what is judged, and their first contact is the same
node on every run.

With one instance each also has a SASL_SSL listener (PLAIN, SCRAM-SHA-256/512) and
authorization on, where the security scenarios judge kop (`Secure`): PLAINTEXT
clients are User:ANONYMOUS, a super user on both, so every other scenario runs as
before. The TLS material is the reference Kafka's (tools/kafka.py makes a CA and a
certificate for 127.0.0.1): one CA file for both targets. The users of
tools/kafka.py's PLAIN list are made SCRAM users on both at start (on kop that is
also what PLAIN checks), the same step on each, so both know the same principals.

`force_compaction` is the one thing a scenario asks each broker differently: what
compaction removed shows on Kafka once its log cleaner has run, on kop once Pulsar's
retention deleted the live ledgers (docs/decisions.md D10)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import jwt
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from conformance.pulsar_admin import PulsarPartition, wait_kop_noted

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "tools"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Secure:
    """A target's SASL_SSL listener: where it is, the CA a client trusts there, and the
    users (name: password) known to both targets, `admin` a super user."""

    bootstrap: str
    ca_file: str
    users: dict[str, str]


@dataclass
class Broker:
    name: str
    port: int
    secure: Secure | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def force_compaction(self, topic: str, partitions: int = 1) -> None:
        """Kafka: nothing to do. Its log cleaner runs by itself (every
        log.cleaner.backoff.ms) on what the topic's configs make cleanable; a scenario
        sets them (small segment.ms, min.cleanable.dirty.ratio, delete.retention.ms),
        rolls the active segment with a later record, and waits for the result."""


# The conformance kop's token key: its admin HTTP asks for a token once authorization is on.
ADMIN_KEY = b"conformance-admin-http-token-key!"


@dataclass
class KopBroker(Broker):
    admin_ports: list[int] = field(default_factory=list)
    admin_token: str | None = None  # a super user's, where the admin HTTP needs one

    def force_compaction(self, topic: str, partitions: int = 1) -> None:
        """Once kop's compaction cycle (every second here) noted the survivors of
        every record written so far, delete the live ledgers as retention would: only
        Pulsar's compacted view is left, which kop serves at the original offsets. A
        caller waits for kop's retention check to notice."""
        for p in range(partitions):
            wait_kop_noted(self.admin_ports, topic, p, 60, self.admin_token)
            PulsarPartition(topic, p).delete_live_ledgers()


def _tool(name: str, *args: str) -> int:
    return subprocess.run([sys.executable, str(TOOLS / f"{name}.py"), *args]).returncode


@contextlib.contextmanager
def _service(name: str, *options: str) -> Iterator[None]:
    """tools/<name>.py's broker, healthy; stopped afterwards only if started here."""
    status = subprocess.run(
        [sys.executable, str(TOOLS / f"{name}.py"), "status", *options], capture_output=True
    )
    already = status.returncode == 0
    if not already and _tool(name, "start", *options) != 0:
        raise RuntimeError(f"tools/{name}.py start failed (see above)")
    try:
        yield
    finally:
        if not already:
            _tool(name, "stop", *options)


def _kafka_secure() -> Secure:
    done = subprocess.run([sys.executable, str(TOOLS / "kafka.py"), "secure"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return Secure(**json.loads(done.stdout))


def _secure_env(port: int, sasl_port: int, kafka: Secure) -> dict[str, str]:
    """kop as the reference Kafka is set up: PLAINTEXT beside SASL_SSL, ANONYMOUS and
    admin super users, Kafka's certificate."""
    tls = Path(kafka.ca_file).parent
    listeners = f"PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:{sasl_port}"
    return {
        "KOP_LISTENERS": listeners, "KOP_ADVERTISED_LISTENERS": listeners,
        "KOP_SASL_ENABLED_MECHANISMS": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "KOP_SSL_CERT_FILE": str(tls / "server.cert.pem"),
        "KOP_SSL_KEY_FILE": str(tls / "server.key.pem"),
        "KOP_ANONYMOUS_ROLE": "ANONYMOUS", "KOP_SUPERUSER_ROLES": "ANONYMOUS,admin",
        # for the harness's admin HTTP calls (force_compaction): no SASL mechanism uses it
        "KOP_AUTH_TOKEN_SECRET_KEY": "data:;base64," + base64.b64encode(ADMIN_KEY).decode(),
    }  # fmt: skip


def make_users(bootstrap: str, users: dict[str, str]) -> None:
    """Each user a SCRAM user of both mechanisms (AlterUserScramCredentials as
    ANONYMOUS over PLAINTEXT, a super user on both targets)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    alterations = [
        UserScramCredentialUpsertion(
            user, ScramCredentialInfo(getattr(ScramMechanism, m), 4096), password.encode()
        )
        for user, password in users.items()
        for m in ("SCRAM_SHA_256", "SCRAM_SHA_512")
    ]
    for alteration in alterations:  # one per request: Kafka refuses a user twice in one
        for fut in admin.alter_user_scram_credentials([alteration]).values():
            fut.result(60)


def _kop_env(node_id: int, port: int, admin_port: int, system: str) -> dict[str, str]:
    return {
        **os.environ, "KOP_NODE_ID": str(node_id), "KOP_PORT": str(port),
        "KOP_ADMIN_PORT": str(admin_port), "KOP_ADVERTISED_HOST": "127.0.0.1",
        "KOP_SCHEMA_REGISTRY_PORT": "0",  # not 8081: `make run`'s kop may have it
        # its own cluster: not one with a kop that may be running beside it
        "KOP_SYSTEM_NAMESPACE": system,
        "KOP_CLUSTER_SECRET": f"conformance-secret-{system}",  # the instances' credential
        # force_compaction waits for a compaction cycle (compacted topics only),
        # then deletes the live ledgers, which kop notices at its next retention
        # check (one admin call per open partition; Kafka's cleaner takes longer)
        "KOP_COMPACTION_INTERVAL_S": "1", "KOP_RETENTION_CHECK_S": "2",
    }  # fmt: skip


def _live_nodes(admin_port: int, token: str | None) -> list[int]:
    """The node ids an instance counts as live (its admin HTTP /v1/instances; a
    superuser's token where kop authorizes)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = f"http://127.0.0.1:{admin_port}/v1/instances"
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as resp:
        return sorted(i["node_id"] for i in json.loads(resp.read())["instances"])


def _await_cluster(
    procs: list[subprocess.Popen[bytes]],
    admin_ports: list[int],
    logs: list[Path],
    token: str | None,
) -> None:
    """Until every instance answers and counts all of them live, so that Metadata
    lists every broker and ownership has settled before the first scenario."""
    everyone = list(range(len(procs)))
    deadline = time.monotonic() + 60
    seen: list[list[int] | str] = []
    while True:
        for proc, log in zip(procs, logs, strict=True):
            if proc.poll() is not None:
                raise RuntimeError(f"kop exited with {proc.returncode}; see {log}")
        seen = []
        for port in admin_ports:
            try:
                seen.append(_live_nodes(port, token))
            except OSError as exc:
                seen.append(str(exc))
        if all(s == everyone for s in seen):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"kop instances not all live after 60 s: {seen}; see {logs}")
        time.sleep(0.2)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def kop_target(log_dir: Path, instances: int = 1) -> Iterator[Broker]:
    """`instances` kop gateways of their own (node ids 0..n-1) on free ports, over the
    local Pulsar; the bootstrap is node 0."""
    with _service("pulsar"):
        system = f"public/__kop-conformance-{uuid.uuid4().hex[:8]}"
        log_dir.mkdir(parents=True, exist_ok=True)
        procs: list[subprocess.Popen[bytes]] = []
        ports, admin_ports, logs = [], [], []
        kafka = _kafka_secure() if instances == 1 else None
        sasl_port = _free_port()
        try:
            for node in range(instances):
                port, admin_port = _free_port(), _free_port()
                env = _kop_env(node, port, admin_port, system)
                if kafka is not None:
                    env.update(_secure_env(port, sasl_port, kafka))
                log_path = log_dir / f"kop-{port}.log"
                with open(log_path, "ab") as log:
                    procs.append(subprocess.Popen(
                        [sys.executable, "-m", "kop.cli.main", "serve"], stdout=log, stderr=log,
                        env=env, cwd=REPO,
                    ))  # fmt: skip
                ports.append(port)
                admin_ports.append(admin_port)
                logs.append(log_path)
            # a super user's: the secure kop authorizes, and its admin HTTP then wants one
            token = jwt.encode({"sub": "admin"}, ADMIN_KEY, "HS256") if kafka is not None else None
            _await_cluster(procs, admin_ports, logs, token)
            secure = None
            if kafka is not None:
                secure = Secure(f"127.0.0.1:{sasl_port}", kafka.ca_file, kafka.users)
                make_users(f"127.0.0.1:{ports[0]}", kafka.users)
            yield KopBroker("kop", ports[0], secure, admin_ports, token)
        finally:
            _stop(procs)


def _kafka_bootstrap(brokers: int) -> str:
    """The first broker's address (tools/kafka.py knows the ports of each setting)."""
    done = subprocess.run(
        [sys.executable, str(TOOLS / "kafka.py"), "bootstrap", "--brokers", str(brokers)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip().split(",")[0]


@contextlib.contextmanager
def kafka_target(brokers: int = 1) -> Iterator[Broker]:
    """The reference Kafka (tools/kafka.py): one broker, or a cluster of `brokers`."""
    with _service("kafka", "--brokers", str(brokers)):
        port = int(_kafka_bootstrap(brokers).rsplit(":", 1)[1])
        secure = None
        if brokers == 1:
            secure = _kafka_secure()
            make_users(f"127.0.0.1:{port}", secure.users)
        yield Broker("kafka", port, secure)
