"""The two brokers every scenario runs against: a kop gateway (over the local
Pulsar from tools/pulsar.py) and the reference Apache Kafka from tools/kafka.py.
Each is reused when already running, otherwise started here and stopped after."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
               "KOP_ADVERTISED_HOST": "127.0.0.1"}  # fmt: skip
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
            yield Broker("kop", port)
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
