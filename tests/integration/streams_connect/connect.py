"""A Kafka Connect 4.3.1 distributed worker, configured as Kafka's own
config/connect-distributed.properties configures one, and its REST API."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from tests.integration.conftest import free_port
from tests.integration.streams_connect.jvm import JavaApp, wait_until

MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"


class ConnectWorker(JavaApp):
    """One worker of a Connect cluster of its own (group, internal topics)."""

    def __init__(
        self, classpath: str, bootstrap: str, work: Path, exactly_once: bool = False,
        extra: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        """`exactly_once`: exactly.once.source.support=enabled (KIP-618): source tasks
        write their records and their offsets in one transaction each. `extra`: more
        worker settings (`plugin.path`, ...)."""
        cluster = f"connect-{uuid.uuid4().hex[:8]}"
        self.port = free_port()
        self.internal_topics = {
            f"{kind}.storage.topic": f"{cluster}-{suffix}"
            for kind, suffix in (("config", "configs"), ("offset", "offsets"), ("status", "status"))
        }
        settings = {
            "bootstrap.servers": bootstrap,
            "group.id": cluster,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            **self.internal_topics,
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "offset.flush.interval.ms": "1000",
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
        }
        settings.update(extra or {})
        if exactly_once:
            settings["exactly.once.source.support"] = "enabled"
            # A task killed -9 mid-transaction leaves it open in the offsets topic, and a
            # restarted worker reads that topic committed-only: it waits out the task's
            # transaction timeout (60 s by default, on Kafka 4.3.1 as on kop).
            settings["producer.transaction.timeout.ms"] = "10000"
        properties = work / f"{cluster}.properties"
        properties.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        fatal = r"^.*(Failed to start Connect|Uncaught exception in herder work thread).*"
        super().__init__("connect", classpath, MAIN, [str(properties)], work, fatal)

    def rest(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        """(HTTP status, decoded JSON body); a refused connection is status 0."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, raw.decode(errors="replace")
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            return 0, str(e)

    def put_connector(self, name: str, config: dict[str, str]) -> tuple[int, Any]:
        """PUT /connectors/{name}/config: creates or updates, as a deployment script does."""
        return self.rest("PUT", f"/connectors/{name}/config", {"name": name, **config})

    def all_running(self, names: list[str]) -> bool:
        """Each connector and each of its tasks in state RUNNING."""
        for name in names:
            status, body = self.rest("GET", f"/connectors/{name}/status")
            if status != 200 or body["connector"]["state"] != "RUNNING":
                return False
            tasks = body.get("tasks") or []
            if not tasks or any(task["state"] != "RUNNING" for task in tasks):
                return False
        return True

    def statuses(self, names: list[str]) -> str:
        return "; ".join(f"{n}: {self.rest('GET', f'/connectors/{n}/status')}" for n in names)


def complete_lines(path: Path) -> list[str]:
    """Its complete lines (the sink may be caught halfway through writing one)."""
    text = path.read_text() if path.exists() else ""
    return text[: text.rfind("\n") + 1].splitlines()


def append_lines(path: Path, first: int, count: int) -> None:
    with open(path, "a") as f:
        f.writelines(f"line {i:05d} {uuid.uuid4().hex}\n" for i in range(first, first + count))


def create_connector(worker: ConnectWorker, name: str, config: dict[str, str]) -> None:
    """PUT until accepted: a worker still joining its group answers 409 for a while."""
    answers: list[tuple[int, object]] = []

    def accepted() -> bool:
        answers.append(worker.put_connector(name, config))
        return answers[-1][0] in (200, 201)

    wait_until(f"{name} accepted", accepted, 60, lambda: str(answers[-1:]), [worker])
