"""Kafka Connect 4.3.1, unmodified, in distributed mode: a worker that creates its
config, offset and status topics itself (compacted, checked with DescribeConfigs at
start), a FileStreamSource and a FileStreamSink configured through the REST API,
then a restart of the worker. The sink file must equal the source file, line for
line: nothing lost, nothing written twice, in order."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from tests.integration.streams_connect.connect import ConnectWorker
from tests.integration.streams_connect.jvm import wait_until
from tests.integration.streams_connect.wordcount import create_topics

pytestmark = [pytest.mark.apps, pytest.mark.timeout(600)]


@pytest.fixture
def worker(apps_classpath: str, app_bootstrap: str, tmp_path: Path) -> Iterator[ConnectWorker]:
    connect = ConnectWorker(apps_classpath, app_bootstrap, tmp_path)
    yield connect
    connect.stop()


def _lines(path: Path) -> list[str]:
    """Its complete lines (the sink may be caught halfway through writing one)."""
    text = path.read_text() if path.exists() else ""
    return text[: text.rfind("\n") + 1].splitlines()


def _append(path: Path, first: int, count: int) -> None:
    with open(path, "a") as f:
        f.writelines(f"line {i:05d} {uuid.uuid4().hex}\n" for i in range(first, first + count))


def _create(worker: ConnectWorker, name: str, config: dict[str, str]) -> None:
    """PUT until accepted: a worker still joining its group answers 409 for a while."""
    answers: list[tuple[int, object]] = []

    def accepted() -> bool:
        answers.append(worker.put_connector(name, config))
        return answers[-1][0] in (200, 201)

    wait_until(f"{name} accepted", accepted, 60, lambda: str(answers[-1:]), [worker])


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
    _append(source, 0, 500)
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
        _create(worker, name, config)
    wait_until("connectors RUNNING", lambda: worker.all_running(names), 120,
               lambda: worker.statuses(names), [worker])  # fmt: skip
    wait_until("500 lines in the sink", lambda: len(_lines(sink)) >= 500, 120,
               lambda: f"{len(_lines(sink))} lines", [worker])  # fmt: skip
    assert _lines(sink) == _lines(source)
    topics = list(worker.internal_topics.values())
    assert set(_cleanup_policies(app_bootstrap, topics).values()) == {"compact"}

    assert worker.stop() in (0, 143), worker.diagnosis()  # 143: SIGTERM, after a clean shutdown
    _append(source, 500, 300)  # written while the worker is down
    worker.start()
    wait_until("connectors RUNNING after the restart", lambda: worker.all_running(names), 180,
               lambda: worker.statuses(names), [worker])  # fmt: skip
    _append(source, 800, 200)  # and while it runs again
    took = wait_until("1000 lines in the sink", lambda: len(_lines(sink)) >= 1000, 180,
                      lambda: f"{len(_lines(sink))} lines", [worker])  # fmt: skip
    print(f"[apps] the sink caught up {took:.1f} s after the last lines", flush=True)
    assert _lines(sink) == _lines(source)
