#!/usr/bin/env python3
"""Provision and run a reference Apache Kafka broker, the one kop is judged against.

Stdlib only (runs before any virtualenv exists), built on tools/provision.py like
tools/pulsar.py. Kafka's binary tarball is not reachable from our machines, so the
broker's and the tools' runtime classpath is resolved from Maven Central with
Maven (tools/kafka/pom.xml) into a cache outside the repository. ``start`` runs
one KRaft node that is broker and controller at once (``kafka.Kafka``), or with
``--brokers N`` a cluster of its own beside it: that node plus N-1 brokers (the
judge of several kop instances); ``tool`` runs the distribution's command-line
tools with that classpath.

Subcommands::

    python3 tools/kafka.py fetch              # resolve jars into the cache (instant when cached)
    python3 tools/kafka.py start [--fresh]    # fetch if needed, format, start, wait until healthy
    python3 tools/kafka.py status             # exit 0 if healthy, 1 if not
    python3 tools/kafka.py stop               # stop the Kafka this tool started
    python3 tools/kafka.py bootstrap          # print the brokers' addresses (host:port,...)
    python3 tools/kafka.py secure             # the SASL_SSL listener, CA file, users (JSON)
    python3 tools/kafka.py tool NAME [ARGS]   # a CLI tool, e.g. `tool topics --list
                                              #   --bootstrap-server 127.0.0.1:19092`

start, status, stop and bootstrap take ``--brokers N`` (default 1).

Environment:
    KOP_CACHE_DIR                cache root (default ~/.cache/kop)
    KOP_KAFKA_BROKERS            brokers (default 1)
    KOP_KAFKA_DATA               data dir (default <cache>/kafka-data; with N > 1
                                 brokers <cache>/kafka-data-<N>brokers)
    KOP_KAFKA_PORT               broker (PLAINTEXT) listener port (default 19092; with
                                 N > 1 brokers 19192, broker k on it + 100 (k-1))
    KOP_KAFKA_CONTROLLER_PORT    controller listener port (default 19093; N > 1: 19193)
    KOP_KAFKA_SASL_SSL_PORT      the single broker's SASL_SSL listener port (default 19094)
    KOP_KAFKA_START_TIMEOUT      seconds to wait for health on start (default 120)
    KOP_KAFKA_STOP_TIMEOUT       seconds to wait after SIGTERM before SIGKILL (default 30)
    KOP_KAFKA_JVM_OPTS           replaces the broker's heap/GC options (JVM_OPTS below)
    KOP_KAFKA_TOOL_JVM_OPTS      replaces the tools' heap/GC options (TOOL_JVM_OPTS below)
    KOP_MAVEN_SETTINGS           Maven settings.xml to use instead of the generated
                                 one (which mirrors every repository to Maven Central)
    KOP_MAVEN_ARGS               extra arguments for mvn (e.g. -Dmaven.repo.local=...)

See docs/kafka.md.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import cluster_security
import provision
from provision import Health, Tool, ToolError, fail

KAFKA_VERSION = "4.3.1"
MAIN_CLASS = "kafka.Kafka"
POM = provision.REPO_ROOT / "tools" / "kafka" / "pom.xml"

HOST = "127.0.0.1"
NODE_ID = 1  # the controller's node id; the other brokers of a cluster follow it
DEFAULT_BROKER_PORT = 19092
DEFAULT_CONTROLLER_PORT = 19093
# The single broker's SASL_SSL listener (PLAIN and SCRAM), where the security
# scenarios judge kop; a cluster (--brokers N > 1) has none.
DEFAULT_SASL_SSL_PORT = 19094
# A cluster of N > 1 brokers gets ports and a data dir of its own, so that it can run
# beside the single broker (make test judges one kop by that one meanwhile).
CLUSTER_BROKER_PORT = 19192
CLUSTER_CONTROLLER_PORT = 19193
# Broker k of a cluster listens on the broker port + 100 (k - 1), as the instances of
# `kop standalone --instances` are spaced.
NODE_PORT_STEP = 100
MAX_BROKERS = 9
DEFAULT_START_TIMEOUT = 120.0
DEFAULT_STOP_TIMEOUT = 30.0

# Heap/GC options of the broker; KOP_KAFKA_JVM_OPTS replaces this list. Kafka's
# bin/kafka-server-start.sh uses a 1 GiB heap; 512 MiB because the broker shares
# a 2-core machine with Pulsar, kop and the test clients. The GC flags are
# bin/kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS.
JVM_OPTS: list[str] = [
    "-Xms256m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-XX:+PerfDisableSharedMem",
]

# Heap/GC options of `tool`; KOP_KAFKA_TOOL_JVM_OPTS replaces this list.
# bin/kafka-run-class.sh's default heap for tools is 256 MiB too.
TOOL_JVM_OPTS: list[str] = [
    "-Xmx256m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-XX:+PerfDisableSharedMem",
]

# The distribution's bin/kafka-*.sh scripts, by the name after "kafka-". Any
# fully qualified class name is accepted as well (like kafka-run-class.sh).
TOOLS: dict[str, str] = {
    "console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "topics": "org.apache.kafka.tools.TopicCommand",
    "consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "configs": "kafka.admin.ConfigCommand",
    "broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "transactions": "org.apache.kafka.tools.TransactionsCommand",
    "acls": "org.apache.kafka.tools.AclCommand",
    "features": "org.apache.kafka.tools.FeatureCommand",
    "metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "cluster": "org.apache.kafka.tools.ClusterTool",
    "leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "storage": "kafka.tools.StorageTool",
    "verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
}

# The broker's config. Kafka's defaults except what one node that is both broker
# and controller needs; each line says why (see docs/kafka.md).
SERVER_PROPERTIES = """\
# Generated by tools/kafka.py on every start; edit SERVER_PROPERTIES there.
# One KRaft node, broker and controller at once.
process.roles=broker,controller
node.id={node_id}
# Dynamic quorum (KIP-853): formatted with `storage format --standalone`, no static voters.
controller.quorum.bootstrap.servers={host}:{controller_port}
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://{host}:{broker_port},CONTROLLER://{host}:{controller_port}{sasl_ssl}
# The default map has no CONTROLLER entry.
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT{sasl_ssl_map}
log.dirs={log_dirs}
"""

# Internal topics default to 3 replicas (and min.isr 2), which one broker cannot host:
# __consumer_offsets, __transaction_state and __share_group_state would never be created.
# A cluster keeps one replica too (both templates end with this).
INTERNAL_TOPICS = """\
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
"""
SERVER_PROPERTIES += INTERNAL_TOPICS

# The single broker's SASL_SSL listener beside PLAINTEXT, and an authorizer, so
# authentication and authorization are judged too (docs/kafka.md, "Security"). A
# PLAINTEXT client is User:ANONYMOUS, a super user: every other scenario (and the
# controller's own connections) runs as before. SASL users: PLAIN from the JAAS
# line below; SCRAM ones are made with kafka-configs (AlterUserScramCredentials),
# as on kop. The same users exist on kop once a scenario made them SCRAM users there.
# The listener itself is in `listeners` and the protocol map above.
SECURITY_PROPERTIES = """\
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=\\
org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=\\
org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=\\
org.apache.kafka.common.security.scram.ScramLoginModule required;
# PEM: the key (PKCS#8, unencrypted) and the certificate in one file.
ssl.keystore.type=PEM
ssl.keystore.location={keystore}
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS;User:admin
"""

# PLAIN users of the SASL_SSL listener (user: password).
SASL_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}

# A further broker of a cluster (--brokers N): node 1 above is the quorum's only
# controller. Internal topics keep one replica as on the single broker, so the cluster
# differs from it only in where partitions and groups live (default.replication.factor
# is 1 by default: a topic has one replica, on one of the brokers).
BROKER_PROPERTIES = """\
# Generated by tools/kafka.py on every start; edit BROKER_PROPERTIES there.
# A broker of a cluster whose only controller is node {controller_id}.
process.roles=broker
node.id={node_id}
controller.quorum.bootstrap.servers={host}:{controller_port}
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://{host}:{broker_port}
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={log_dirs}
"""
BROKER_PROPERTIES += INTERNAL_TOPICS

# The broker logs to <data>/server.log, not to the console. launch() moves the
# previous run's file to server.log.1; log4j rolls it at 64 MiB, keeping 3.
# Levels as in Kafka's config/log4j2.yaml. shutdownHook=disable keeps the
# logger alive while Kafka's own shutdown hook logs the controlled shutdown.
LOG4J2_XML = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by tools/kafka.py. -->
<Configuration status="WARN" shutdownHook="disable">
  <Appenders>
    <RollingFile name="File" fileName="{log}" filePattern="{log}.%i">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
      <Policies>
        <SizeBasedTriggeringPolicy size="64 MB"/>
      </Policies>
      <DefaultRolloverStrategy max="3"/>
    </RollingFile>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="warn"/>
    <Logger name="kafka.network.RequestChannel$" level="warn"/>
    <Root level="info">
      <AppenderRef ref="File"/>
    </Root>
  </Loggers>
</Configuration>
"""

# For `tool` and `storage format`: warnings and errors on stderr only, like
# Kafka's config/tools-log4j2.yaml, so a tool's stdout is just its output.
TOOLS_LOG4J2_XML = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by tools/kafka.py: quiet logging for the command-line tools. -->
<Configuration status="WARN">
  <Appenders>
    <Console name="Stderr" target="SYSTEM_ERR">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="warn">
      <AppenderRef ref="Stderr"/>
    </Root>
  </Loggers>
</Configuration>
"""

PROG = "tools/kafka.py"
TOOL = Tool(PROG, "kafka", "Kafka")
say = TOOL.say


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Node:
    """One Kafka JVM. Node 1 is broker and controller (the quorum's only voter); the
    further nodes of a cluster are brokers that find the quorum through its port."""

    node_id: int
    port: int
    dir: Path
    controller_port: int
    sasl_ssl_port: int | None = None  # the single broker's; a cluster has none

    @property
    def is_controller(self) -> bool:
        return self.node_id == NODE_ID

    @property
    def conf_file(self) -> Path:
        return self.dir / "server.properties"

    @property
    def log4j_file(self) -> Path:
        return self.dir / "log4j2.xml"

    @property
    def server_log(self) -> Path:
        return self.dir / "server.log"

    @property
    def out_file(self) -> Path:
        return self.dir / "kafka.out"

    @property
    def pid_file(self) -> Path:
        return self.dir / "kafka.pid"

    @property
    def log_dirs(self) -> Path:
        return self.dir / ("kraft-combined-logs" if self.is_controller else "kraft-broker-logs")

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def certificates(self) -> cluster_security.Certificates:
        return cluster_security.Certificates(self.dir / "tls")

    @property
    def keystore(self) -> Path:
        return self.dir / "tls" / "keystore.pem"

    def config(self) -> str:
        template = SERVER_PROPERTIES if self.is_controller else BROKER_PROPERTIES
        if self.sasl_ssl_port is not None:
            template += SECURITY_PROPERTIES
        users = " ".join(f'user_{u}="{p}"' for u, p in SASL_USERS.items())
        secure = self.sasl_ssl_port is not None
        return template.format(
            node_id=self.node_id, controller_id=NODE_ID, host=HOST, broker_port=self.port,
            controller_port=self.controller_port, log_dirs=self.log_dirs,
            sasl_ssl=f",SASL_SSL://{HOST}:{self.sasl_ssl_port}" if secure else "",
            sasl_ssl_map=",SASL_SSL:SASL_SSL" if secure else "",
            plain_users=users, keystore=self.keystore,
        )  # fmt: skip

    def ensure_keystore(self) -> None:
        """The SASL_SSL listener's CA and certificate (made once, kept across restarts)."""
        certs = self.certificates
        if certs.ensure() or not self.keystore.is_file():
            key, cert = certs.server_key.read_text(), certs.server_cert.read_text()
            self.keystore.write_text(key + cert)
            os.chmod(self.keystore, 0o600)


@dataclass(frozen=True)
class Settings:
    cache_dir: Path
    data_dir: Path
    broker_port: int
    controller_port: int
    start_timeout: float
    stop_timeout: float
    brokers: int = 1
    sasl_ssl_port: int = DEFAULT_SASL_SSL_PORT

    @property
    def dist(self) -> provision.Dist:
        return provision.Dist(
            product="Kafka",
            version=KAFKA_VERSION,
            pom=POM,
            dir=self.cache_dir / f"kafka-{KAFKA_VERSION}",
            properties={"kafka.version": KAFKA_VERSION},
            required_jars=(f"kafka_2.13-{KAFKA_VERSION}.jar", f"kafka-tools-{KAFKA_VERSION}.jar"),
        )

    @property
    def nodes(self) -> list[Node]:
        """The single broker lives in the data dir itself; a cluster's node k in node-k/."""
        if self.brokers == 1:
            return [
                Node(NODE_ID, self.broker_port, self.data_dir, self.controller_port,
                     self.sasl_ssl_port)
            ]  # fmt: skip
        return [
            Node(NODE_ID + k, self.broker_port + NODE_PORT_STEP * k,
                 self.data_dir / f"node-{NODE_ID + k}", self.controller_port)
            for k in range(self.brokers)
        ]  # fmt: skip

    @property
    def first(self) -> Node:
        """The controller node: its broker port is the bootstrap the probe asks."""
        return self.nodes[0]

    def broker(self, node: Node) -> provision.Broker:
        return provision.Broker(
            tool=TOOL,
            pid_file=node.pid_file,
            # kafka.out holds the command line and what the JVM prints before log4j
            # is up (bad options, missing classes, a crash); server.log the rest.
            logs=(node.out_file, node.server_log),
            # The config path tells this node's broker from any other kafka.Kafka.
            markers=(MAIN_CLASS, str(node.conf_file)),
            start_timeout=self.start_timeout,
            stop_timeout=self.stop_timeout,
            timeout_env="KOP_KAFKA_START_TIMEOUT",
        )

    @property
    def tools_log4j_file(self) -> Path:
        return self.dist.dir / "tools-log4j2.xml"

    @property
    def log_dirs(self) -> Path:
        return self.first.log_dirs

    @property
    def bootstrap(self) -> str:
        return self.first.bootstrap

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def controller(self) -> str:
        return f"{HOST}:{self.controller_port}"


def _brokers(args: argparse.Namespace | None) -> int:
    raw = getattr(args, "brokers", None) or os.environ.get("KOP_KAFKA_BROKERS", "").strip() or 1
    try:
        count = int(raw)
    except ValueError:
        fail(f"brokers {raw!r} (from --brokers or KOP_KAFKA_BROKERS) is not a number")
    if not 1 <= count <= MAX_BROKERS:
        fail(f"brokers {count}: choose 1 to {MAX_BROKERS}")
    return count


def load_settings(args: argparse.Namespace | None = None) -> Settings:
    brokers = _brokers(args)
    cluster = brokers > 1
    port = CLUSTER_BROKER_PORT if cluster else DEFAULT_BROKER_PORT
    controller = CLUSTER_CONTROLLER_PORT if cluster else DEFAULT_CONTROLLER_PORT
    place = provision.load_place(
        args,
        "KOP_KAFKA",
        [
            provision.PortSpec("port", "KOP_KAFKA_PORT", "broker port", port),
            provision.PortSpec(
                "controller_port", "KOP_KAFKA_CONTROLLER_PORT", "controller port", controller
            ),
            provision.PortSpec(
                "sasl_ssl_port", "KOP_KAFKA_SASL_SSL_PORT", "SASL_SSL port", DEFAULT_SASL_SSL_PORT
            ),
        ],
        DEFAULT_START_TIMEOUT,
        DEFAULT_STOP_TIMEOUT,
    )
    data_dir = place.data_dir
    if cluster and not (getattr(args, "data_dir", None) or os.environ.get("KOP_KAFKA_DATA")):
        data_dir = place.cache_dir / f"kafka-data-{brokers}brokers"
    s = Settings(
        cache_dir=place.cache_dir,
        data_dir=data_dir,
        broker_port=place.ports[0],
        controller_port=place.ports[1],
        start_timeout=place.start_timeout,
        stop_timeout=place.stop_timeout,
        brokers=brokers,
        sasl_ssl_port=place.ports[2],
    )
    ports = [n.port for n in s.nodes]
    if s.brokers == 1:
        ports.append(s.sasl_ssl_port)
    if s.controller_port in ports or len(set(ports)) < len(ports) or max(ports) > 65535:
        fail(
            f"broker ports {', '.join(map(str, ports))} and controller port {s.controller_port} "
            "must be distinct and below 65536; choose others with KOP_KAFKA_PORT / "
            "KOP_KAFKA_CONTROLLER_PORT"
        )
    return s


# --------------------------------------------------------------------------- Kafka protocol

API_METADATA = 3
API_FIND_COORDINATOR = 10
API_DESCRIBE_GROUPS = 15
API_API_VERSIONS = 18
METADATA_VERSION = 4  # the oldest version Kafka 4 still serves; v4-v8 share the layout we read
FIND_COORDINATOR_VERSION = 1  # v1-v2 share the layout we write and read (v3+ is flexible)
DESCRIBE_GROUPS_VERSION = 0  # non-flexible; one request asks about many groups
MAX_RESPONSE = 16 * 2**20

OFFSETS_TOPIC = "__consumer_offsets"
# Names of the groups the health probe asks about. They are never joined, so Kafka
# creates no group for them (FindCoordinator and DescribeGroups only read).
HEALTH_GROUP = "kop-tools-kafka-health"
# Group-level error codes that mean "this coordinator is not ready for the group yet".
COORDINATOR_ERRORS = {
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
}


class _Reader:
    """Big-endian reader over one response body (non-flexible versions only)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def int8(self) -> int:
        return self._take(">b")

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def string(self) -> str | None:
        n = self.int16()
        if n < 0:
            return None
        raw = self.data[self.pos : self.pos + n]
        if len(raw) != n:
            raise ValueError("truncated string")
        self.pos += n
        return raw.decode("utf-8", "replace")

    def skip_bytes(self) -> None:
        n = self.int32()
        if n > 0:
            if self.pos + n > len(self.data):
                raise ValueError("truncated bytes")
            self.pos += n

    def int32_array(self) -> list[int]:
        return [self.int32() for _ in range(self.int32())]


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ValueError("connection closed mid-response")
        buf += chunk
    return bytes(buf)


def _request(
    sock: socket.socket, api_key: int, version: int, correlation: int, body: bytes
) -> _Reader:
    """Send one request (header v1) and return a reader over its response body."""
    client_id = b"kop-tools-kafka"
    header = struct.pack(">hhih", api_key, version, correlation, len(client_id)) + client_id
    sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
    prefix = _recv_exact(sock, 4)
    if prefix == b"HTTP":
        raise ValueError("it answers HTTP, not the Kafka protocol")
    (size,) = struct.unpack(">i", prefix)
    if not 4 <= size <= MAX_RESPONSE:
        raise ValueError(f"implausible response size {size}")
    data = _recv_exact(sock, size)
    (got,) = struct.unpack_from(">i", data)
    if got != correlation:
        raise ValueError(f"correlation id {got}, expected {correlation}")
    return _Reader(data[4:])


@dataclass
class BrokerInfo:
    cluster_id: str | None
    brokers: list[tuple[int, str, int]]  # (node id, host, port) of registered, unfenced brokers


def _read_brokers(r: _Reader) -> list[tuple[int, str, int]]:
    """A Metadata v4 response's broker array."""
    brokers = []
    for _ in range(r.int32()):
        node = r.int32()
        host_name = r.string() or ""
        broker_port = r.int32()
        r.string()  # rack
        brokers.append((node, host_name, broker_port))
    return brokers


def kafka_metadata(host: str, port: int, timeout: float = 5.0) -> BrokerInfo:
    """ApiVersions, then Metadata for no topics. Raises OSError / ValueError.

    A Metadata response lists only brokers that are registered with the
    controller and unfenced, so a non-empty list means the node serves clients.
    """
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        r = _request(sock, API_API_VERSIONS, 0, 1, b"")
        error = r.int16()
        if error:
            raise ValueError(f"ApiVersions error code {error}")
        ranges = {}
        for _ in range(r.int32()):
            key, low, high = r.int16(), r.int16(), r.int16()
            ranges[key] = (low, high)
        for api, name, version in (
            (API_METADATA, "Metadata", METADATA_VERSION),
            (API_FIND_COORDINATOR, "FindCoordinator", FIND_COORDINATOR_VERSION),
            (API_DESCRIBE_GROUPS, "DescribeGroups", DESCRIBE_GROUPS_VERSION),
        ):
            low, high = ranges.get(api, (0, -1))
            if not low <= version <= high:
                raise ValueError(f"{name} v{version} not supported (v{low}-v{high})")
        # topics: empty array (= none; null would mean all), allow_auto_topic_creation: false
        r = _request(sock, API_METADATA, METADATA_VERSION, 2, struct.pack(">ib", 0, 0))
        r.int32()  # throttle_time_ms
        brokers = _read_brokers(r)
        return BrokerInfo(cluster_id=r.string(), brokers=brokers)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode() (over UTF-16 code units), as a signed 32-bit int."""
    raw = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i : i + 2], "big")) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def offsets_partition(group: str, partitions: int) -> int:
    """The __consumer_offsets partition whose coordinator owns `group`: Kafka's
    Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions."""
    h = java_string_hash(group)
    return (0 if h == -(2**31) else abs(h)) % partitions


def health_groups(partitions: int) -> list[str]:
    """One group name per __consumer_offsets partition, in partition order."""
    chosen: dict[int, str] = {}
    i = 0
    while len(chosen) < partitions:
        name = f"{HEALTH_GROUP}-{i}"
        chosen.setdefault(offsets_partition(name, partitions), name)
        i += 1
    return [chosen[p] for p in range(partitions)]


def _error_name(code: int) -> str:
    return COORDINATOR_ERRORS.get(code, f"error code {code}")


def _offsets_leaders(sock: socket.socket) -> tuple[dict[int, tuple[str, int]], list[int]]:
    """Metadata v4 for __consumer_offsets: the brokers (node id -> host, port) and each
    partition's leader in partition order (-1: none yet; no partitions: no topic yet)."""
    body = struct.pack(">i", 1) + _string(OFFSETS_TOPIC) + struct.pack(">b", 0)
    r = _request(sock, API_METADATA, METADATA_VERSION, 3, body)
    r.int32()  # throttle_time_ms
    brokers = {node: (host, port) for node, host, port in _read_brokers(r)}
    r.string()  # cluster_id
    r.int32()  # controller_id
    leaders: dict[int, int] = {}
    for _ in range(r.int32()):
        topic_error, _name, _internal = r.int16(), r.string(), r.int8()
        for _ in range(r.int32()):
            r.int16()  # partition error_code
            index = r.int32()
            leaders[index] = r.int32()
            r.int32_array()  # replica_nodes
            r.int32_array()  # isr_nodes
        if topic_error:
            return brokers, []
    return brokers, [leaders[p] for p in sorted(leaders)]


def _unserved_groups(sock: socket.socket, groups: list[str]) -> list[int]:
    """DescribeGroups v0 at the groups' coordinator: the error code of each group not
    served yet."""
    body = struct.pack(">i", len(groups)) + b"".join(_string(g) for g in groups)
    r = _request(sock, API_DESCRIBE_GROUPS, DESCRIBE_GROUPS_VERSION, 4, body)
    errors = []
    for _ in range(r.int32()):
        error = r.int16()
        for _ in range(4):  # group_id, group_state, protocol_type, protocol_data
            r.string()
        for _ in range(r.int32()):
            for _ in range(3):  # member_id, client_id, client_host
                r.string()
            r.skip_bytes()  # member_metadata
            r.skip_bytes()  # member_assignment
        if error:  # v0 answers a group that does not exist with no error (state Dead)
            errors.append(error)
    return errors


def group_coordinator_gap(host: str, port: int, timeout: float = 5.0) -> str | None:
    """Why the broker cannot serve every consumer group yet; None when it can.
    Raises OSError / ValueError.

    A fresh cluster has no __consumer_offsets: the first FindCoordinator makes the
    broker create it, and each partition's coordinator loads its partition some
    seconds later. Until then OffsetFetch answers COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS. They are retriable, but some
    clients hand them to the application (librdkafka's committed() does with
    NOT_COORDINATOR), so a judge that had just started would differ from a
    long-running Kafka. One group per partition is asked about, because the
    partitions are loaded one by one.
    """
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        body = _string(HEALTH_GROUP) + struct.pack(">b", 0)  # key_type 0: a consumer group
        r = _request(sock, API_FIND_COORDINATOR, FIND_COORDINATOR_VERSION, 1, body)
        r.int32()  # throttle_time_ms
        error = r.int16()
        if error:
            return f"no group coordinator yet (FindCoordinator: {_error_name(error)})"
        brokers, leaders = _offsets_leaders(sock)
        total = len(leaders)
        if total == 0:
            return f"{OFFSETS_TOPIC} does not exist yet"
        unled = sum(1 for leader in leaders if leader not in brokers)
        if unled:
            return f"{unled} of {total} {OFFSETS_TOPIC} partitions have no leader yet"
        unserved = _unserved_at_leaders(brokers, leaders, timeout)
        if unserved:
            names = ", ".join(sorted({_error_name(e) for e in unserved}))
            return (
                f"{len(unserved)} of {total} {OFFSETS_TOPIC} partitions serve no group yet "
                f"({names})"
            )
        return None


def _unserved_at_leaders(
    brokers: dict[int, tuple[str, int]], leaders: list[int], timeout: float
) -> list[int]:
    """Each health group asked at its partition's leader, its coordinator (with
    several brokers the partitions are spread, and any other broker would answer
    NOT_COORDINATOR whether the group is served or not)."""
    asked: dict[int, list[str]] = {}
    for partition, group in enumerate(health_groups(len(leaders))):
        asked.setdefault(leaders[partition], []).append(group)
    errors: list[int] = []
    for leader, groups in sorted(asked.items()):
        with socket.create_connection(brokers[leader], timeout=timeout) as sock:
            sock.settimeout(timeout)
            errors += _unserved_groups(sock, groups)
    return errors


# --------------------------------------------------------------------------- health


def formatted_cluster_id(node: Node) -> str | None:
    """The cluster id `storage format` wrote into the node's log dir, or None if unformatted."""
    try:
        text = (node.log_dirs / "meta.properties").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "cluster.id":
            return value.strip()
    return None


@dataclass
class Probe:
    healthy: bool
    detail: str
    foreign: bool = False  # a Kafka-protocol server that is not the broker of our data dir


def probe(s: Settings) -> Probe:
    try:
        info = kafka_metadata(HOST, s.broker_port)
    except ConnectionRefusedError:
        return Probe(False, f"nothing listens on {s.bootstrap}")
    except (OSError, ValueError, struct.error) as e:
        return Probe(False, f"{s.bootstrap} does not answer ApiVersions/Metadata ({e})")
    ours = formatted_cluster_id(s.first)
    if info.cluster_id != ours:
        what = f"cluster id {ours}" if ours else "nothing: it is not formatted"
        return Probe(
            False,
            f"{s.bootstrap} is a Kafka-protocol server with cluster id {info.cluster_id}, but "
            f"{s.log_dirs} holds {what}",
            foreign=True,
        )
    if not info.brokers:
        return Probe(False, f"{s.bootstrap} answers, but no broker is registered and unfenced yet")
    listed = {port for _, _, port in info.brokers}
    missing = [n.bootstrap for n in s.nodes if n.port not in listed]
    if missing:
        advertised = ", ".join(f"{h}:{p}" for _, h, p in info.brokers)
        return Probe(
            False,
            f"{s.bootstrap} answers, but the cluster advertises {advertised}, not yet "
            f"{', '.join(missing)}",
        )
    if not provision.port_open(s.controller_port, HOST):
        return Probe(False, f"the controller listener {s.controller} does not answer")
    try:
        gap = group_coordinator_gap(HOST, s.broker_port)
    except (OSError, ValueError, struct.error) as e:
        return Probe(False, f"{s.bootstrap} does not answer FindCoordinator/DescribeGroups ({e})")
    if gap:
        return Probe(False, f"{s.bootstrap} serves clients, but {gap}")
    nodes = ", ".join(str(n.node_id) for n in s.nodes)
    return Probe(
        True,
        f"Kafka healthy at {s.bootstrap_servers} (cluster {info.cluster_id}, "
        f"node{'s' if len(s.nodes) > 1 else ''} {nodes}, controller {s.controller}, "
        "group coordinator ready)",
    )


def health_check(s: Settings) -> Health:
    p = probe(s)
    if p.foreign:
        return Health(
            False,
            p.detail,
            fatal=f"{p.detail}; stop that server or choose other ports with KOP_KAFKA_PORT / "
            "KOP_KAFKA_CONTROLLER_PORT",
        )
    return Health(p.healthy, p.detail)


# --------------------------------------------------------------------------- format / launch


def random_cluster_id() -> str:
    """What `kafka-storage.sh random-uuid` prints, without starting a JVM for it.

    Kafka's Uuid.toString() is URL-safe base64 without padding; randomUuid()
    never returns the reserved all-zero / metadata-topic ids or a string
    starting with '-' (it would parse as a command-line option).
    """
    while True:
        raw = os.urandom(16)
        text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        if raw not in (bytes(16), bytes(15) + b"\x01") and not text.startswith("-"):
            return text


def _write_if_changed(path: Path, text: str) -> None:
    """Atomic replace, so a concurrent `tool` never reads a half-written file."""
    with contextlib.suppress(OSError):
        if path.read_text() == text:
            return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


def tool_cmd(s: Settings, java: str, main_class: str, args: list[str]) -> list[str]:
    _write_if_changed(s.tools_log4j_file, TOOLS_LOG4J2_XML)
    return [
        java,
        *provision.jvm_opts("KOP_KAFKA_TOOL_JVM_OPTS", TOOL_JVM_OPTS),
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={s.tools_log4j_file}",
        "-cp",
        s.dist.classpath,
        main_class,
        *args,
    ]


def render_config(node: Node) -> None:
    node.dir.mkdir(parents=True, exist_ok=True)
    if node.sasl_ssl_port is not None:
        node.ensure_keystore()
    node.conf_file.write_text(node.config())
    node.log4j_file.write_text(LOG4J2_XML.format(log=node.server_log))


def format_storage(s: Settings, node: Node, java: str, cluster_id: str) -> None:
    """`kafka-storage.sh format`: node 1 with --standalone (the quorum's only voter); a
    further broker joins that cluster id and finds the quorum through its config."""
    quorum = ["--standalone"] if node.is_controller else []
    role = "standalone dynamic quorum" if node.is_controller else f"a broker of node {NODE_ID}"
    say(f"formatting {node.log_dirs} (cluster id {cluster_id}, {role})")
    args = ["format", *quorum, "--cluster-id", cluster_id, "--config", str(node.conf_file)]
    cmd = tool_cmd(s, java, TOOLS["storage"], args)
    res = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        output = (res.stdout + res.stderr).strip()
        last = output.splitlines()[-1] if output else "no output"
        fail(
            f"`storage format` failed with exit code {res.returncode}: {last}; try `{PROG} start "
            "--fresh`",
            context=output,
        )


def format_missing(s: Settings, java: str) -> str:
    """Format each node not formatted yet with the controller's cluster id (a new one
    for a new cluster); its cluster id. A node formatted for another cluster would
    never register, so it is refused here."""
    cluster_id = formatted_cluster_id(s.first) or random_cluster_id()
    for node in s.nodes:
        found = formatted_cluster_id(node)
        if found is None:
            format_storage(s, node, java, cluster_id)
        elif found != cluster_id:
            fail(
                f"{node.log_dirs} belongs to cluster {found}, node {NODE_ID} to {cluster_id}; "
                f"try `{PROG} start --fresh --brokers {s.brokers}`"
            )
    return cluster_id


def launch(s: Settings, node: Node, java: str) -> subprocess.Popen[bytes]:
    cmd = [
        java,
        *provision.jvm_opts("KOP_KAFKA_JVM_OPTS", JVM_OPTS),
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={node.log4j_file}",
        "-cp",
        s.dist.classpath,
        MAIN_CLASS,
        str(node.conf_file),
    ]
    provision.rotate(node.server_log)
    return provision.launch(cmd, log_file=node.out_file, pid_file=node.pid_file, cwd=node.dir)


# --------------------------------------------------------------------------- commands


def cmd_fetch(args: argparse.Namespace) -> int:
    s = load_settings(args)
    with provision.tool_lock(TOOL, s.cache_dir):
        s.dist.fetch(TOOL)
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    s = load_settings(args)
    with provision.tool_lock(TOOL, s.cache_dir):
        return _start(s, args.fresh)


def _start(s: Settings, fresh: bool) -> int:
    running = {n.node_id: s.broker(n).running_pid() for n in s.nodes}
    if fresh:
        for node in reversed(s.nodes):  # brokers first: their controlled shutdown needs node 1
            pid = running[node.node_id]
            if pid is not None:
                s.broker(node).stop_for_fresh(pid)
        running = dict.fromkeys(running)
    missing = [n for n in s.nodes if running[n.node_id] is None]
    if not missing:
        return _reuse(s, running[NODE_ID])

    for node in missing:
        node.pid_file.unlink(missing_ok=True)  # stale
    _refuse_busy_ports(s, missing)
    java = provision.require_java()
    s.dist.fetch(TOOL)

    if fresh:
        s.broker(s.first).wipe(s.data_dir)
    for node in missing:
        render_config(node)
    started = time.monotonic()
    cluster_id = format_missing(s, java)
    procs = {n.node_id: launch(s, n, java) for n in missing}
    roles = "broker+controller" + (f" and {s.brokers - 1} brokers" if s.brokers > 1 else "")
    pids = ", ".join(str(p.pid) for p in procs.values())
    say(
        f"starting Kafka {KAFKA_VERSION} (KRaft {roles}, cluster {cluster_id}, pid {pids}, data "
        f"{s.data_dir}, log {', '.join(str(n.server_log) for n in missing)})"
    )
    return _await_started(s, procs, running, started)


def _reuse(s: Settings, pid: int | None) -> int:
    """Ours, already running (maybe still starting): wait for it, do not start a second one."""
    assert pid is not None
    p = probe(s)
    detail = p.detail
    if not p.healthy:
        say(f"Kafka started by this tool is already running (pid {pid}); waiting until healthy")
        detail = (
            s.broker(s.first).wait_healthy(lambda _: health_check(s), None, pid, time.monotonic())
        ).detail
    say(f"reusing running Kafka (pid {pid}): {detail}")
    return 0


def _refuse_busy_ports(s: Settings, missing: list[Node]) -> None:
    """Unlike tools/pulsar.py, never adopt a broker this tool did not start: the
    reference must be the pinned Kafka, and kop itself answers the same protocol."""
    ports = [n.port for n in missing]
    if s.first in missing:
        ports.append(s.controller_port)
        if s.first.sasl_ssl_port is not None:
            ports.append(s.first.sasl_ssl_port)
    busy = [p for p in ports if provision.port_open(p, HOST)]
    if busy:
        fail(
            f"port(s) {', '.join(map(str, busy))} already in use by something this tool did not "
            f"start ({probe(s).detail}); stop it or choose other ports with KOP_KAFKA_PORT / "
            "KOP_KAFKA_CONTROLLER_PORT"
        )


def _await_started(
    s: Settings, procs: dict[int, subprocess.Popen[bytes]], running: dict[int, int | None],
    started: float,
) -> int:  # fmt: skip
    """Wait until the whole cluster is healthy; on failure stop what this run launched.
    A further broker that exits is fatal at once (node 1's health would only say it is
    not registered, until the timeout)."""
    first = s.first
    proc = procs.get(first.node_id)
    pid = proc.pid if proc is not None else running[first.node_id]
    assert pid is not None
    others = [(n, procs[n.node_id]) for n in s.nodes[1:] if n.node_id in procs]

    def check(_: float) -> Health:
        for node, other in others:
            if other.poll() is not None:
                why = f"Kafka node {node.node_id} exited during startup ({other.returncode})"
                return Health(False, why, fatal=f"{why}; see {node.out_file}, {node.server_log}")
        return health_check(s)

    try:
        detail = s.broker(first).wait_healthy(check, proc, pid, started).detail
    except ToolError:
        for node, other in others:
            if other.poll() is None:
                s.broker(node).terminate(other.pid)
            node.pid_file.unlink(missing_ok=True)
        raise
    s.broker(first).report_healthy(detail, pid, started)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    s = load_settings(args)
    with provision.tool_lock(TOOL, s.cache_dir):
        # brokers first: their controlled shutdown asks the controller, node 1
        return max(s.broker(n).stop() for n in reversed(s.nodes))


def _pids(s: Settings) -> dict[int, int | None]:
    return {n.node_id: s.broker(n).running_pid() for n in s.nodes}


def cmd_status(args: argparse.Namespace) -> int:
    s = load_settings(args)
    pids = _pids(s)
    p = probe(s)
    if p.healthy:
        if s.brokers == 1:
            print(f"healthy: {p.detail} ({s.broker(s.first).owner_text(pids[NODE_ID])})")
        else:
            owners = ", ".join(f"node {n}: pid {pid or 'not ours'}" for n, pid in pids.items())
            print(f"healthy: {p.detail} ({owners})")
        return 0
    detail = p.detail
    ours = {n: pid for n, pid in pids.items() if pid is not None}
    if ours:
        listed = ", ".join(map(str, ours.values()))
        logs = ", ".join(str(n.server_log) for n in s.nodes if n.node_id in ours)
        detail += f"; a Kafka started by this tool is running (pid {listed}), log {logs}"
    print(f"not healthy: {detail}")
    return 1


def cmd_bootstrap(args: argparse.Namespace) -> int:
    """The brokers' addresses, for a client's bootstrap list (whether running or not)."""
    print(load_settings(args).bootstrap_servers)
    return 0


def cmd_secure(args: argparse.Namespace) -> int:
    """The SASL_SSL listener as JSON: its address, the CA file a client trusts, and the
    PLAIN users."""
    node = load_settings(args).first
    if node.sasl_ssl_port is None:
        fail("only the single broker has a SASL_SSL listener (not one of --brokers N > 1)")
    print(json.dumps({
        "bootstrap": f"{HOST}:{node.sasl_ssl_port}",
        "ca_file": str(node.certificates.ca_cert),
        "users": SASL_USERS,
    }))  # fmt: skip
    return 0


def _tool_list() -> str:
    width = max(map(len, TOOLS))
    rows = "\n".join(f"  {name:<{width}}  {cls}" for name, cls in TOOLS.items())
    return (
        f"usage: {PROG} tool NAME [ARGS...]\n\n"
        "Runs a Kafka command-line tool with the cached classpath; pass the broker with\n"
        "--bootstrap-server HOST:PORT as usual. NAME is one of these (bin/kafka-NAME.sh),\n"
        f"or a fully qualified class name:\n\n{rows}\n"
    )


def run_tool(argv: list[str]) -> int:
    """Exec the tool: stdin, stdout, stderr, signals and exit code are the tool's own."""
    if not argv or argv[0] in ("-h", "--help"):
        print(_tool_list(), end="")
        return 0
    name, *args = argv
    main_class = TOOLS.get(name) or (name if "." in name else None)
    if main_class is None:
        fail(
            f"unknown tool {name!r}; run `{PROG} tool --help` for the list, or pass a fully "
            "qualified class name"
        )
    s = load_settings()
    java = provision.require_java()
    if not s.dist.is_fetched():
        # Progress lines to stderr: the tool's stdout may be piped somewhere.
        with contextlib.redirect_stdout(sys.stderr), provision.tool_lock(TOOL, s.cache_dir):
            s.dist.fetch(TOOL)
    cmd = tool_cmd(s, java, main_class, args)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(java, cmd)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Provision and run the reference Apache Kafka broker for kop."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--port",
            help=f"broker listener port (env KOP_KAFKA_PORT, default {DEFAULT_BROKER_PORT}; "
            f"{CLUSTER_BROKER_PORT} with --brokers N > 1)",
        )
        p.add_argument(
            "--controller-port",
            help="controller listener port (env KOP_KAFKA_CONTROLLER_PORT, default "
            f"{DEFAULT_CONTROLLER_PORT}; {CLUSTER_CONTROLLER_PORT} with --brokers N > 1)",
        )
        p.add_argument(
            "--data-dir",
            help="data dir (env KOP_KAFKA_DATA, default <cache>/kafka-data, with N > 1 brokers "
            "<cache>/kafka-data-<N>brokers)",
        )
        p.add_argument(
            "--brokers",
            help="brokers (env KOP_KAFKA_BROKERS, default 1): N > 1 is node 1 (broker and "
            "controller) plus brokers 2..N, on ports and a data dir of their own (default ports "
            f"{CLUSTER_BROKER_PORT} + {NODE_PORT_STEP} (k-1), controller "
            f"{CLUSTER_CONTROLLER_PORT})",
        )

    p_fetch = sub.add_parser("fetch", help="resolve the pinned Kafka jars into the cache")
    p_fetch.set_defaults(func=cmd_fetch)

    p_start = sub.add_parser("start", help="format if needed, start (or reuse), wait until healthy")
    common(p_start)
    p_start.add_argument(
        "--fresh", action="store_true", help="wipe the data dir (new cluster id) before starting"
    )
    p_start.add_argument(
        "--timeout",
        type=float,
        help="seconds to wait for health (env KOP_KAFKA_START_TIMEOUT, default 120)",
    )
    p_start.set_defaults(func=cmd_start)

    p_stop = sub.add_parser("stop", help="stop the Kafka this tool started")
    common(p_stop)
    p_stop.set_defaults(func=cmd_stop)

    p_status = sub.add_parser(
        "status", help="print whether the broker is healthy (exit 0) or not (exit 1)"
    )
    common(p_status)
    p_status.set_defaults(func=cmd_status)

    p_bootstrap = sub.add_parser("bootstrap", help="print the brokers' addresses (host:port,...)")
    common(p_bootstrap)
    p_bootstrap.set_defaults(func=cmd_bootstrap)

    p_secure = sub.add_parser(
        "secure", help="print the SASL_SSL listener (address, CA file, users) as JSON"
    )
    common(p_secure)
    p_secure.set_defaults(func=cmd_secure)

    # Parsed by hand in main(): the tool's own options (--help included) must reach it.
    sub.add_parser(
        "tool",
        help="run a Kafka CLI tool (console-producer, topics, ...); `tool --help` lists them",
        add_help=False,
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["tool"]:
        return TOOL.guard(lambda: run_tool(argv[1:]))
    args = build_parser().parse_args(argv)
    return TOOL.guard(lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
