"""Kafka Connect 4.3.1, unmodified, in distributed mode: a worker that creates its
config, offset and status topics itself (compacted, checked with DescribeConfigs at
start), a FileStreamSource and a FileStreamSink configured through the REST API,
then a restart of the worker. The sink file must equal the source file, line for
line: nothing lost, nothing written twice, in order. With exactly-once source
support (KIP-618: each poll's records and source offsets in one transaction), a
worker killed with -9 mid-way leaves the topic, read read_committed, holding every
line exactly once."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from tests.integration.streams_connect.connect import (
    ConnectWorker,
    append_lines,
    complete_lines,
    create_connector,
)
from tests.integration.streams_connect.jvm import wait_until
from tests.integration.streams_connect.wordcount import create_topics

pytestmark = [pytest.mark.apps, pytest.mark.timeout(600)]


@pytest.fixture
def worker(apps_classpath: str, app_bootstrap: str, tmp_path: Path) -> Iterator[ConnectWorker]:
    connect = ConnectWorker(apps_classpath, app_bootstrap, tmp_path)
    yield connect
    connect.stop()


def _cleanup_policies(bootstrap: str, topics: list[str]) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    return {
        resource.name: future.result(30)["cleanup.policy"].value
        for resource, future in admin.describe_configs(resources).items()
    }


def test_file_source_to_file_sink_survives_a_worker_restart(
    worker: ConnectWorker, app_bootstrap: str, tmp_path: Path
) -> None:
    topic = f"connect-{uuid.uuid4().hex[:8]}"
    create_topics(app_bootstrap, {topic: 1})  # one partition: the sink keeps the order
    source, sink = tmp_path / "source.txt", tmp_path / "sink.txt"
    append_lines(source, 0, 500)
    connectors = {
        "file-source": {"connector.class": "FileStreamSource", "tasks.max": "1",
                        "file": str(source), "topic": topic},
        "file-sink": {"connector.class": "FileStreamSink", "tasks.max": "1",
                      "file": str(sink), "topics": topic},
    }  # fmt: skip
    names = list(connectors)
    worker.start()
    took = wait_until("the REST API", lambda: worker.rest("GET", "/connectors")[0] == 200, 120,
                      lambda: str(worker.rest("GET", "/connectors")), [worker])  # fmt: skip
    print(f"[apps] Connect worker answering after {took:.1f} s", flush=True)
    for name, config in connectors.items():
        create_connector(worker, name, config)
    wait_until("connectors RUNNING", lambda: worker.all_running(names), 120,
               lambda: worker.statuses(names), [worker])  # fmt: skip
    wait_until("500 lines in the sink", lambda: len(complete_lines(sink)) >= 500, 120,
               lambda: f"{len(complete_lines(sink))} lines", [worker])  # fmt: skip
    assert complete_lines(sink) == complete_lines(source)
    topics = list(worker.internal_topics.values())
    assert set(_cleanup_policies(app_bootstrap, topics).values()) == {"compact"}

    assert worker.stop() in (0, 143), worker.diagnosis()  # 143: SIGTERM, after a clean shutdown
    append_lines(source, 500, 300)  # written while the worker is down
    worker.start()
    wait_until("connectors RUNNING after the restart", lambda: worker.all_running(names), 180,
               lambda: worker.statuses(names), [worker])  # fmt: skip
    append_lines(source, 800, 200)  # and while it runs again
    took = wait_until("1000 lines in the sink", lambda: len(complete_lines(sink)) >= 1000, 180,
                      lambda: f"{len(complete_lines(sink))} lines", [worker])  # fmt: skip
    print(f"[apps] the sink caught up {took:.1f} s after the last lines", flush=True)
    assert complete_lines(sink) == complete_lines(source)


def _read_committed(bootstrap: str, topic: str) -> list[str]:
    """The topic's values up to its last stable offset, as a read_committed reader."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
        "isolation.level": "read_committed", "enable.auto.commit": False,
    })  # fmt: skip
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        consumer.assign([TopicPartition(topic, 0, 0)])
        out: list[str] = []
        deadline = time.monotonic() + 60
        while consumer.position([TopicPartition(topic, 0)])[0].offset < end:
            assert time.monotonic() < deadline, f"{topic} not read to {end}"
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                out.append(msg.value().decode())
        return out
    finally:
        consumer.close()


def test_an_exactly_once_source_writes_every_line_once_across_a_kill9(
    apps_classpath: str, app_bootstrap: str, tmp_path: Path
) -> None:
    worker = ConnectWorker(apps_classpath, app_bootstrap, tmp_path, exactly_once=True)
    topic = f"connect-eos-{uuid.uuid4().hex[:8]}"
    create_topics(app_bootstrap, {topic: 1})
    source = tmp_path / "source.txt"
    append_lines(source, 0, 2000)
    config = {"connector.class": "FileStreamSource", "tasks.max": "1", "file": str(source),
              "topic": topic, "exactly.once.support": "required",
              "transaction.boundary": "poll", "batch.size": "50"}  # fmt: skip
    try:
        worker.start()
        wait_until("the REST API", lambda: worker.rest("GET", "/connectors")[0] == 200, 120,
                   lambda: str(worker.rest("GET", "/connectors")), [worker])  # fmt: skip
        create_connector(worker, "eos-source", config)
        wait_until("eos-source RUNNING", lambda: worker.all_running(["eos-source"]), 120,
                   lambda: worker.statuses(["eos-source"]), [worker])  # fmt: skip
        wait_until("some lines committed", lambda: len(_read_committed(app_bootstrap, topic)) > 0,
                   120, lambda: "none yet", [worker])  # fmt: skip
        worker.kill9()  # mid-way: a transaction may be open, its offsets not committed
        append_lines(source, 2000, 500)
        worker.start()
        wait_until("eos-source RUNNING after the kill", lambda: worker.all_running(["eos-source"]),
                   180, lambda: worker.statuses(["eos-source"]), [worker])  # fmt: skip
        took = wait_until("2500 lines committed",
                          lambda: len(_read_committed(app_bootstrap, topic)) >= 2500, 180,
                          lambda: f"{len(_read_committed(app_bootstrap, topic))} lines",
                          [worker])  # fmt: skip
        print(f"[apps] exactly-once source caught up {took:.1f} s after the restart", flush=True)
        assert _read_committed(app_bootstrap, topic) == complete_lines(source)
    finally:
        worker.stop()
