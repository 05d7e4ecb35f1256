"""tools/kafka.py --brokers N: the reference Kafka as a cluster (node 1 broker and
controller, nodes 2..N brokers), which judges several kop instances. Its own ports and
data dir, so it can run beside the single broker; healthy only once every broker is
registered and each group coordinator serves, asked at the broker that leads its
__consumer_offsets partition (any other answers NOT_COORDINATOR regardless)."""

from __future__ import annotations

import argparse
import random
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.fake_kafka import (
    CLUSTER_ID,
    LOAD_IN_PROGRESS,
    Coordinator,
    Server,
    serve,
    tool,
)


def _args(**given: str) -> argparse.Namespace:
    fields = ("brokers", "port", "controller_port", "data_dir", "timeout")
    return argparse.Namespace(**{f: given.get(f) for f in fields})


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("BROKERS", "PORT", "CONTROLLER_PORT", "DATA"):
        monkeypatch.delenv(f"KOP_KAFKA_{name}", raising=False)
    monkeypatch.setenv("KOP_CACHE_DIR", str(tmp_path))


def test_three_brokers_get_ports_and_a_data_dir_beside_the_single_one(tmp_path: Path) -> None:
    single = tool.load_settings(_args())
    cluster = tool.load_settings(_args(brokers="3"))
    assert [(n.node_id, n.port) for n in single.nodes] == [(1, 19092)]
    assert single.first.conf_file == tmp_path / "kafka-data" / "server.properties"
    assert [(n.node_id, n.port) for n in cluster.nodes] == [(1, 19192), (2, 19292), (3, 19392)]
    assert cluster.controller_port == 19193
    assert cluster.bootstrap_servers == "127.0.0.1:19192,127.0.0.1:19292,127.0.0.1:19392"
    dirs = [n.dir for n in cluster.nodes]
    assert dirs == [tmp_path / "kafka-data-3brokers" / f"node-{i}" for i in (1, 2, 3)]
    assert len({n.log_dirs for n in (*single.nodes, *cluster.nodes)}) == 4


def test_node_1_is_the_only_controller_and_the_others_find_it() -> None:
    first, second, _ = tool.load_settings(_args(brokers="3")).nodes
    combined, broker = first.config(), second.config()
    assert "process.roles=broker,controller" in combined
    assert "CONTROLLER://127.0.0.1:19193" in combined
    assert "process.roles=broker\n" in broker and "node.id=2\n" in broker
    assert "controller.quorum.bootstrap.servers=127.0.0.1:19193" in broker
    assert "listeners=PLAINTEXT://127.0.0.1:19292\n" in broker
    for config in (combined, broker):  # one replica, as on the single broker
        assert "offsets.topic.replication.factor=1" in config
        assert "transaction.state.log.replication.factor=1" in config


def test_a_broker_port_on_the_controller_port_is_refused() -> None:
    with pytest.raises(tool.ToolError, match="must be distinct"):
        tool.load_settings(_args(brokers="3", port="20000", controller_port="20100"))
    with pytest.raises(tool.ToolError, match="choose 1 to"):
        tool.load_settings(_args(brokers="0"))


def _bind_cluster(count: int, coordinator: Coordinator) -> list[Server]:
    """Fake brokers on a base port + 100 k (as tools/kafka.py spaces them)."""
    for _ in range(50):
        base = random.randrange(20000, 40000)
        servers: list[Server] = []
        try:
            for k in range(count):
                servers.append(serve(base + 100 * k, coordinator, node_id=1 + k))
            return servers
        except OSError:
            for server in servers:
                server.server_close()
    raise RuntimeError("no free ports for the fake cluster")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[object, Coordinator, list[Server]]]:
    """Settings for three brokers pointing at three fake ones (and a controller port),
    node 1's log dir formatted with the fakes' cluster id."""
    coordinator = Coordinator()
    servers = _bind_cluster(3, coordinator)
    coordinator.nodes = {s.node_id: s.server_address[1] for s in servers}
    controller = socket.create_server(("127.0.0.1", 0))
    settings = tool.Settings(
        cache_dir=tmp_path, data_dir=tmp_path, broker_port=servers[0].server_address[1],
        controller_port=controller.getsockname()[1], start_timeout=5.0, stop_timeout=5.0,
        brokers=3,
    )  # fmt: skip
    settings.first.log_dirs.mkdir(parents=True)
    (settings.first.log_dirs / "meta.properties").write_text(f"cluster.id={CLUSTER_ID}\n")
    try:
        yield settings, coordinator, servers
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
        controller.close()


def test_each_group_is_asked_at_the_broker_that_leads_its_partition(
    cluster: tuple[object, Coordinator, list[Server]],
) -> None:
    settings, coordinator, _ = cluster
    p = tool.probe(settings)
    assert p.healthy, p.detail
    assert "nodes 1, 2, 3" in p.detail
    assert sorted(coordinator.asked_at) == [1, 2, 3]
    for node, groups in coordinator.asked_at.items():
        assert {coordinator.leader(tool.offsets_partition(g, 50)) for g in groups} == {node}
    assert sum(len(g) for g in coordinator.asked_at.values()) == 50


def test_a_group_loading_on_another_broker_keeps_the_cluster_unhealthy(
    cluster: tuple[object, Coordinator, list[Server]],
) -> None:
    settings, coordinator, _ = cluster
    loading = tool.health_groups(50)[1]  # partition 1: led by node 2
    coordinator.group_errors = {loading: LOAD_IN_PROGRESS}
    p = tool.probe(settings)
    assert not p.healthy
    assert "1 of 50" in p.detail and "COORDINATOR_LOAD_IN_PROGRESS" in p.detail


def test_a_broker_not_registered_yet_keeps_the_cluster_unhealthy(
    cluster: tuple[object, Coordinator, list[Server]],
) -> None:
    settings, coordinator, servers = cluster
    third = coordinator.nodes.pop(3)  # Metadata lists nodes 1 and 2 only
    p = tool.probe(settings)
    assert not p.healthy
    assert f"not yet 127.0.0.1:{third}" in p.detail
    assert servers[2].server_address[1] == third


def test_the_single_broker_judges_security_and_a_cluster_does_not() -> None:
    """SASL_SSL beside PLAINTEXT, an authorizer, ANONYMOUS (PLAINTEXT, the controller)
    a super user; a cluster node has none of it (security cells are n/a there)."""
    single = tool.load_settings(_args()).first.config()
    logical = single.replace("\\\n", "")  # Java properties: a trailing \ continues the line
    assert (
        "listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093,"
        "SASL_SSL://127.0.0.1:19094\n" in logical
    )
    assert "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512\n" in logical
    assert 'user_alice="alice-secret"' in logical
    assert "super.users=User:ANONYMOUS;User:admin\n" in logical
    assert logical.count("\nlisteners=") == 1  # the secure line replaces the plain one
    for node in tool.load_settings(_args(brokers="3")).nodes:
        assert "SASL_SSL" not in node.config() and "authorizer" not in node.config()
