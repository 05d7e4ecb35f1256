"""Record real clients' frames: a kop of its own advertising a recording proxy
(`fuzz.capture`), and every conformance driver (librdkafka, kafka-python,
aiokafka, franz-go, Sarama, kafkajs, kcat) producing, consuming, listing
offsets and consuming in a group through it, then Kafka's own CLI tools.

    python -m fuzz.capture_clients      # against the local Pulsar; seeds into tests/corpus/seeds
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from conformance.clients import DRIVERS, LIBRARIES
from conformance.model import Rec
from fuzz.cleanup import drop_namespaces

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_CLI = [
    ("kafka-topics", "--create", "--topic", "capture-cli", "--partitions", "2"),
    ("kafka-topics", "--describe", "--topic", "capture-cli"),
    ("kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", "capture-cli"),
    ("kafka-consumer-groups", "--list"),
    ("kafka-consumer-groups", "--describe", "--all-groups"),
    ("kafka-log-dirs", "--describe"),
    ("kafka-topics", "--delete", "--topic", "capture-cli"),
]


def _drive(name: str, bootstrap: str, records: list[Rec]) -> None:
    """What a scenario asks of a library; a step the library cannot do is skipped."""
    client: Any = DRIVERS[name]
    topic = f"capture-{name}"
    print(f"[capture] {name}", flush=True)
    with contextlib.suppress(Exception):
        client.produce(bootstrap, topic, records, compression="lz4", idempotent=True)
        client.consume(bootstrap, topic, 5)
        client.group_consume(bootstrap, topic, f"group-{name}", 5)
        client.committed(bootstrap, f"group-{name}", topic, 0)


def _cli(tool: str, bootstrap: str, *args: str, stdin: bytes = b"") -> None:
    """One of Kafka's own command-line tools (tools/kafka.py runs it)."""
    command = [sys.executable, str(REPO / "tools" / "kafka.py"), "tool", tool]
    subprocess.run(
        [*command, "--bootstrap-server", bootstrap, *args],
        input=stdin, capture_output=True, timeout=120,
    )  # fmt: skip


def main() -> int:
    kop_port, admin_port, proxy_port = _free_port(), _free_port(), _free_port()
    suffix = uuid.uuid4().hex[:8]
    namespaces = [f"public/capture-{suffix}", f"public/capture-sys-{suffix}"]
    env = {
        **os.environ,
        "KOP_PORT": str(kop_port),
        "KOP_ADMIN_PORT": str(admin_port),
        "KOP_ADVERTISED_PORT": str(proxy_port),  # every client comes back through the proxy
        "KOP_NAMESPACE": namespaces[0].split("/")[1],
        "KOP_SYSTEM_NAMESPACE": namespaces[1],
        "KOP_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    }
    kop = subprocess.Popen([sys.executable, "-m", "kop.cli.main", "serve"], env=env, cwd=REPO)
    proxy = subprocess.Popen(
        [sys.executable, "-m", "fuzz.capture", "--upstream", f"127.0.0.1:{kop_port}",
         "--listen", str(proxy_port)],
        cwd=REPO,
    )  # fmt: skip
    bootstrap = f"localhost:{proxy_port}"
    try:
        time.sleep(8)  # kop's start: Pulsar lookups, the offsets topic
        records = [
            Rec(b"k%d" % i, b"v%d" % i, (("h", b"x"),), 1_700_000_000_000 + i) for i in range(5)
        ]
        for name in LIBRARIES:
            _drive(name, bootstrap, records)
        for tool, *args in _CLI:
            print(f"[capture] {tool} {' '.join(args[:2])}", flush=True)
            _cli(tool, bootstrap, *args)
        _cli("kafka-console-producer", bootstrap, "--topic", "capture-console", stdin=b"a\nb\n")
        _cli(
            "kafka-console-consumer", bootstrap, "--topic", "capture-console",
            "--from-beginning", "--max-messages", "2", "--group", "capture-console",
        )  # fmt: skip
    finally:
        proxy.terminate()
        kop.terminate()
        kop.wait(60)
        drop_namespaces(os.environ.get("KOP_PULSAR_HTTP_URL", "http://localhost:8080"), namespaces)
    return 0


if __name__ == "__main__":
    sys.exit(main())
