"""Integration fixtures: a real Pulsar (started by tools/pulsar.py when none is
healthy) and kop gateways run as real subprocesses, as users run them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PULSAR_TOOL = [sys.executable, str(REPO / "tools" / "pulsar.py")]
PULSAR_URL = os.environ.get("KOP_PULSAR_SERVICE_URL", "pulsar://localhost:6650")
PULSAR_HTTP = os.environ.get("KOP_PULSAR_HTTP_URL", "http://localhost:8080")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `restarts_pulsar` run after every other test of the session.

    They stop the one Pulsar all integration tests share and start it again: a
    test after them would meet gateways (the session's `kop`) still reconnecting,
    or, if the restart failed, no Pulsar at all, and fail for reasons not its
    own. Their place must not depend on their file's name sorting last, nor on
    other plugins' reordering: this hook runs last (trylast) and is a stable
    sort, so every other test keeps its order.
    """
    items.sort(key=lambda item: item.get_closest_marker("restarts_pulsar") is not None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KopProcess:
    """One kop gateway subprocess (`kop serve`), restartable and killable. Unless told
    otherwise, each has a system namespace of its own: kop processes sharing one are
    one cluster (they split the partitions and groups between them, and a second
    process with the same node id is refused), and tests run several side by side."""

    def __init__(self, log_dir: Path, **env: str) -> None:
        self.port = free_port()
        self.admin_port = free_port()
        self.env = {
            **os.environ,
            "KOP_PORT": str(self.port),
            "KOP_ADMIN_PORT": str(self.admin_port),
            "KOP_PULSAR_SERVICE_URL": PULSAR_URL,
            "KOP_PULSAR_HTTP_URL": PULSAR_HTTP,
            "KOP_SYSTEM_NAMESPACE": f"public/__kop-it-{uuid.uuid4().hex[:8]}",
            **env,
        }
        # Processes of one system namespace are one cluster: they share its secret.
        self.env.setdefault("KOP_CLUSTER_SECRET", f"it-secret-{self.env['KOP_SYSTEM_NAMESPACE']}")
        self.log_path = log_dir / f"kop-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def system_namespace(self) -> str:
        return self.env["KOP_SYSTEM_NAMESPACE"]

    @property
    def bootstrap(self) -> str:
        return f"localhost:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kop.cli.main", "serve"], env=self.env, stdout=log, stderr=log
        )
        # kop opens its Kafka listener before its admin HTTP one: a test that asks the
        # admin API right after start (a CI run met "connection refused") needs both.
        admin = int(self.env["KOP_ADMIN_PORT"])
        registry = int(self.env.get("KOP_SCHEMA_REGISTRY_PORT") or 0)
        ports = [self.port] + [p for p in (admin, registry) if p]
        deadline = time.monotonic() + timeout
        while ports and time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kop exited early:\n{self.log_path.read_text()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", ports[0]), timeout=0.5):
                    ports.pop(0)
            except OSError:
                time.sleep(0.2)
        if ports:
            raise RuntimeError(
                f"kop did not listen in {timeout}s:\n{self.log_path.read_text()[-3000:]}"
            )

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:  # stuck: its stacks into its log, for the report
            size = self.log_path.stat().st_size
            self.proc.send_signal(signal.SIGUSR1)
            deadline = time.monotonic() + 5
            while self.log_path.stat().st_size == size and time.monotonic() < deadline:
                time.sleep(0.1)
            self.proc.kill()
            return self.proc.wait(10)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="session")
def pulsar() -> Iterator[str]:
    healthy = subprocess.run([*PULSAR_TOOL, "status"], capture_output=True).returncode == 0
    if not healthy:
        subprocess.run([*PULSAR_TOOL, "start"], check=True)
    yield PULSAR_URL
    if not healthy:
        subprocess.run([*PULSAR_TOOL, "stop"], check=False)


@pytest.fixture(scope="session")
def kop(pulsar: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KopProcess]:
    gateway = KopProcess(tmp_path_factory.mktemp("kop"))
    gateway.start()
    yield gateway
    gateway.stop()


@pytest.fixture
def fresh_kop(pulsar: str, tmp_path: Path) -> Iterator[KopProcess]:
    """A gateway of the test's own, for tests that kill or restart it."""
    gateway = KopProcess(tmp_path)
    gateway.start()
    yield gateway
    gateway.stop()


@pytest.fixture
def topic() -> str:
    return f"it-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def limited_kop(pulsar: str, tmp_path: Path) -> Iterator[KopProcess]:
    """A gateway of the test's own with small limits, serving a namespace of its own
    (so the partitions it counts are only its test's); the namespace goes after."""
    namespace = f"kop-limits-{uuid.uuid4().hex[:10]}"
    gateway = KopProcess(
        tmp_path,
        KOP_NAMESPACE=namespace,
        KOP_MAX_PARTITIONS_PER_TOPIC="4",
        KOP_MAX_PARTITIONS_TOTAL="10",
        KOP_FETCH_MAX_BYTES_CAP=str(1 << 20),
        KOP_GROUP_MAX_SIZE="2",
    )
    gateway.start()
    yield gateway
    gateway.stop()
    _drop_namespace(f"public/{namespace}")


def _drop_namespace(namespace: str) -> None:
    """Its topics, then itself (Pulsar refuses to delete a namespace holding topics)."""
    base = f"{PULSAR_HTTP}/admin/v2"

    def call(method: str, path: str) -> Any:
        request = urllib.request.Request(f"{base}/{path}", method=method)
        with urllib.request.urlopen(request, timeout=60) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    with contextlib.suppress(OSError):  # URLError, or a timeout: left for Pulsar to keep
        for name in call("GET", f"persistent/{namespace}/partitioned") or []:
            local = name.rsplit("/", 1)[-1]
            call("DELETE", f"persistent/{namespace}/{local}/partitions?force=true")
        call("DELETE", f"namespaces/{namespace}")


KAFKA_CACHE = Path(os.environ.get("KOP_CACHE_DIR", "~/.cache/kop")).expanduser()


@pytest.fixture(scope="session")
def kafka_lib() -> Path:
    """The reference Kafka's jars, kafka-clients 4.3.1 among them (tools/kafka.py
    fetches them once, then reuses)."""
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, str(root / "tools" / "kafka.py"), "fetch"], check=True)
    lib = KAFKA_CACHE / "kafka-4.3.1" / "lib"
    assert (lib / "kafka-clients-4.3.1.jar").exists(), lib
    return lib
