"""The two brokers every scenario runs against: a kop gateway (over the local
Pulsar from tools/pulsar.py) and the reference Apache Kafka from tools/kafka.py.
Each is reused when already running, otherwise started here and stopped after.

`force_compaction` is the one thing a scenario asks each broker differently: what
compaction removed shows on Kafka once its log cleaner has run, on kop once Pulsar's
retention deleted the live ledgers (docs/decisions.md D10)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from conformance.pulsar_admin import PulsarPartition

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "tools"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
        return True
    return False


@dataclass
class Broker:
    name: str
    port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def force_compaction(self, topic: str, partitions: int = 1) -> None:
        """Kafka: nothing to do. Its log cleaner runs by itself (every
        log.cleaner.backoff.ms) on what the topic's configs make cleanable; a scenario
        sets them (small segment.ms, min.cleanable.dirty.ratio, delete.retention.ms),
        rolls the active segment with a later record, and waits for the result."""


@dataclass
class KopBroker(Broker):
    def force_compaction(self, topic: str, partitions: int = 1) -> None:
        """Once Pulsar compacted every entry written so far and kop's compaction
        cycle (every second here) noted the survivors, delete the live ledgers as
        retention would: only Pulsar's compacted view is left, which kop serves at the
        original offsets. A caller waits for kop's retention check to notice."""
        for p in range(partitions):
            part = PulsarPartition(topic, p)
            part.wait_noted(60)
            part.delete_live_ledgers()


def _tool(name: str, *args: str) -> int:
    return subprocess.run([sys.executable, str(TOOLS / f"{name}.py"), *args]).returncode


@contextlib.contextmanager
def _service(name: str) -> Iterator[None]:
    """tools/<name>.py's broker, healthy; stopped afterwards only if started here."""
    status = subprocess.run(
        [sys.executable, str(TOOLS / f"{name}.py"), "status"], capture_output=True
    )
    already = status.returncode == 0
    if not already and _tool(name, "start") != 0:
        raise RuntimeError(f"tools/{name}.py start failed (see above)")
    try:
        yield
    finally:
        if not already:
            _tool(name, "stop")


@contextlib.contextmanager
def kop_target(log_dir: Path) -> Iterator[Broker]:
    """A kop gateway of its own on free ports, over the local Pulsar."""
    with _service("pulsar"):
        port = _free_port()
        env = {**os.environ, "KOP_PORT": str(port), "KOP_ADMIN_PORT": "0",
               "KOP_ADVERTISED_HOST": "127.0.0.1",
               # its own cluster: not one with a kop that may be running beside it
               "KOP_SYSTEM_NAMESPACE": f"public/__kop-conformance-{uuid.uuid4().hex[:8]}",
               # force_compaction waits for a compaction cycle (compacted topics only),
               # then deletes the live ledgers, which kop notices at its next retention
               # check (one admin call per open partition; Kafka's cleaner takes longer)
               "KOP_COMPACTION_INTERVAL_S": "1", "KOP_RETENTION_CHECK_S": "2"}  # fmt: skip
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"kop-{port}.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kop.cli", "serve"], env=env, stdout=log, stderr=log,
                cwd=REPO,
            )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not _listening(port):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"kop did not start; see {log_path}")
                time.sleep(0.2)
            yield KopBroker("kop", port)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextlib.contextmanager
def kafka_target() -> Iterator[Broker]:
    """The reference Kafka (tools/kafka.py) on its own port."""
    with _service("kafka"):
        yield Broker("kafka", int(os.environ.get("KOP_KAFKA_PORT", "19092")))
