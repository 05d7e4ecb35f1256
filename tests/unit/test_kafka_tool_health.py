"""tools/kafka.py's health probe: the reference Kafka counts as healthy only once its
group coordinator serves every __consumer_offsets partition. A freshly started Kafka
that merely lists its broker still answers OffsetFetch with NOT_COORDINATOR for a
few seconds, which librdkafka's committed() hands to the application: the conformance
judge then showed a difference that was only the reference broker warming up."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.fake_kafka import (
    CLUSTER_ID,
    LOAD_IN_PROGRESS,
    NOT_AVAILABLE,
    NOT_COORDINATOR,
    Coordinator,
    serve,
    tool,
)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[tuple[object, Coordinator]]:
    """Settings pointing at a fake broker (and a listening controller port) whose data
    dir was formatted with the cluster id the fake reports."""
    logs = tmp_path / "kraft-combined-logs"
    logs.mkdir()
    (logs / "meta.properties").write_text(f"version=1\ncluster.id={CLUSTER_ID}\nnode.id=1\n")
    server = serve(0, Coordinator())
    controller = socket.create_server(("127.0.0.1", 0))
    settings = tool.Settings(
        cache_dir=tmp_path, data_dir=tmp_path, broker_port=server.server_address[1],
        controller_port=controller.getsockname()[1], start_timeout=5.0, stop_timeout=5.0,
    )  # fmt: skip
    try:
        yield settings, server.coordinator
    finally:
        server.shutdown()
        server.server_close()
        controller.close()


def test_a_broker_is_healthy_only_once_its_group_coordinator_serves(
    broker: tuple[object, Coordinator],
) -> None:
    settings, coordinator = broker
    coordinator.find_error = NOT_AVAILABLE  # __consumer_offsets not created yet
    p = tool.probe(settings)
    assert not p.healthy and "COORDINATOR_NOT_AVAILABLE" in p.detail

    coordinator.find_error, coordinator.offsets_partitions = 0, 0
    p = tool.probe(settings)
    assert not p.healthy and "__consumer_offsets does not exist" in p.detail

    coordinator.offsets_partitions = 50
    coordinator.every_group_error = NOT_COORDINATOR  # created, not yet loaded
    p = tool.probe(settings)
    assert not p.healthy and "50 of 50" in p.detail and "NOT_COORDINATOR" in p.detail

    coordinator.every_group_error = 0
    p = tool.probe(settings)
    assert p.healthy, p.detail
    assert not p.foreign


def test_one_partition_still_loading_keeps_it_unhealthy(
    broker: tuple[object, Coordinator],
) -> None:
    settings, coordinator = broker
    coordinator.group_errors = {"kop-tools-kafka-health-0": LOAD_IN_PROGRESS}
    p = tool.probe(settings)
    assert not p.healthy
    assert "1 of 50" in p.detail and "COORDINATOR_LOAD_IN_PROGRESS" in p.detail
    # one group per partition was asked about
    assert len(coordinator.asked) == 50
    assert sorted(tool.offsets_partition(g, 50) for g in coordinator.asked) == list(range(50))


@pytest.mark.parametrize(
    ("group", "partition"),
    # Observed on Kafka 4.3.1: the __consumer_offsets partition whose log grew when the
    # group committed. "polygenelubricants" hashes to Integer.MIN_VALUE (Utils.abs: 0).
    [("kop-tools-kafka-health-0", 23), ("mygroup", 39), ("polygenelubricants", 0)],
)
def test_group_partition_is_kafkas(group: str, partition: int) -> None:
    assert tool.offsets_partition(group, 50) == partition
