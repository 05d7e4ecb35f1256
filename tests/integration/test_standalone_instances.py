"""`kop standalone --instances 3` (what `make cluster` runs): three instances with
node ids 0-2 on ports 100 apart that find each other; killing one by hand leaves
two that know it is gone; Ctrl-C stops the rest cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

from tests.integration.conftest import PULSAR_HTTP, PULSAR_URL, _drop_namespace


def _free_base() -> int:
    """A port free at itself, +100 and +200 (the three instances' Kafka ports), and the
    same for the admin ports 2 above."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + 202 > 65535:
            continue
        try:
            for offset in (0, 2, 100, 102, 200, 202):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", base + offset))
            return base
        except OSError:
            continue
    raise AssertionError("no free port triple")


def _instances(admin_port: int) -> list[int] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/v1/instances", timeout=2) as r:
            return [i["node_id"] for i in json.loads(r.read())["instances"]]
    except OSError:
        return None


def _until(what: str, check: object, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {within:.0f} s")


def test_three_instances_from_one_command(pulsar: str, tmp_path: Path) -> None:
    base = _free_base()
    suffix = uuid.uuid4().hex[:8]
    env = {
        **os.environ,
        "KOP_PULSAR_SERVICE_URL": PULSAR_URL,
        "KOP_PULSAR_HTTP_URL": PULSAR_HTTP,
        "KOP_NAMESPACE": f"standalone-{suffix}",
        "KOP_SYSTEM_NAMESPACE": f"public/__kop-standalone-{suffix}",
    }
    log = open(tmp_path / "standalone.log", "wb")  # noqa: SIM115 - handed to the child
    command = [sys.executable, "-m", "kop.cli.main", "standalone", "--instances", "3",
               "--port", str(base), "--admin-port", str(base + 2)]  # fmt: skip
    supervisor = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
    admins = [base + 2 + 100 * i for i in range(3)]
    try:
        _until("three instances see each other",
               lambda: all(_instances(a) == [0, 1, 2] for a in admins))  # fmt: skip
        children = Path(f"/proc/{supervisor.pid}/task/{supervisor.pid}/children").read_text()
        pids = [int(p) for p in children.split()]
        assert len(pids) == 3
        node1 = next(p for p in pids if b"KOP_NODE_ID=1\0" in _environ(p))
        os.kill(node1, signal.SIGKILL)
        _until("the other two drop node 1",
               lambda: all(_instances(a) == [0, 2] for a in (admins[0], admins[2])))  # fmt: skip
        os.killpg(supervisor.pid, signal.SIGINT)  # Ctrl-C in its terminal
        assert supervisor.wait(90) == 0
    finally:
        if supervisor.poll() is None:
            os.killpg(supervisor.pid, signal.SIGKILL)
        log.close()
        _drop_namespace(f"public/standalone-{suffix}")
    text = (tmp_path / "standalone.log").read_text(errors="replace")
    assert "[node 0]" in text and "[node 2]" in text and "kop ready: node 2" in text


def _environ(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes() + b"\0"
