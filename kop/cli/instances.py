"""`kop standalone --instances N`: N kop processes on one machine, as a small cluster
to try several instances by hand (kill one, watch the others take over).

Instance i is `kop serve` with node id i, Kafka on the base port + 100 i, admin
HTTP on the admin base port + 100 i and the Schema Registry on its base port (8081,
or `KOP_SCHEMA_REGISTRY_PORT`) + 100 i, its lines prefixed `[node i]`. Ctrl-C reaches
every instance (they share the terminal's process group) and each stops as it
always does: hands over, finishes in-flight requests, flushes its index.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import click

PORT_STEP = 100


def instance_env(index: int, port: int, admin_port: int, flags: dict[str, Any]) -> dict[str, str]:
    """Instance `index`'s environment: the command line's settings as `KOP_*`, then its own
    identity and ports."""
    env = dict(os.environ)
    for name, value in flags.items():
        if value is not None:
            env[f"KOP_{name.upper()}"] = str(value)
    env["KOP_NODE_ID"] = str(index)
    env["KOP_PORT"] = str(port + PORT_STEP * index)
    env["KOP_ADMIN_PORT"] = str(admin_port + PORT_STEP * index) if admin_port else "0"
    registry = int(env.get("KOP_SCHEMA_REGISTRY_PORT") or 8081)
    env["KOP_SCHEMA_REGISTRY_PORT"] = str(registry + PORT_STEP * index) if registry else "0"
    return env


def _relay(index: int, stream: IO[bytes]) -> None:
    for raw in iter(stream.readline, b""):
        click.echo(f"[node {index}] {raw.decode(errors='replace').rstrip()}")


def run_instances(count: int, config_file: Path | None, flags: dict[str, Any]) -> int:
    """Run `count` instances until all have exited; the worst exit code."""
    port = flags.pop("port", None) or 9092
    admin_port = flags.pop("admin_port", None)
    admin_port = 9094 if admin_port is None else admin_port
    command = [sys.executable, "-m", "kop.cli.main", "serve"]
    if config_file is not None:
        command += ["--config", str(config_file)]
    if not (flags.get("cluster_secret") or os.environ.get("KOP_CLUSTER_SECRET")):
        # The instances' shared credential (docs/security.md), new for this run.
        flags = {**flags, "cluster_secret": secrets.token_urlsafe(32)}
    procs: list[subprocess.Popen[bytes]] = []
    relays: list[threading.Thread] = []
    for i in range(count):
        env = instance_env(i, port, admin_port, flags)
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        relay = threading.Thread(target=_relay, args=(i, proc.stdout), daemon=True)
        relay.start()
        procs.append(proc)
        relays.append(relay)
        click.echo(
            f"[kop] node {i}: Kafka on localhost:{env['KOP_PORT']}, "
            f"admin HTTP on {env['KOP_ADMIN_PORT']}"
        )
    click.echo(f"[kop] {count} instances; Ctrl-C stops all, kill one to watch the others take over")

    # SIGTERM to this process stops them all as Ctrl-C does (a terminal's Ctrl-C reaches
    # them itself; a service manager's SIGTERM reaches only this process).
    def stop_all(*_: object) -> None:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop_all)
    try:
        codes = [p.wait() for p in procs]
    except KeyboardInterrupt:  # the instances got the same SIGINT and are stopping
        codes = [_stopped(p) for p in procs]
    for relay in relays:
        relay.join(5)
    for i, code in enumerate(codes):
        if code not in (0, -signal.SIGINT, -signal.SIGTERM):
            click.echo(f"[kop] node {i} exited with {code}")
    return max((c for c in codes if c > 0), default=0)


def _stopped(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(10)
