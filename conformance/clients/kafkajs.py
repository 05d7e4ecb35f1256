"""kafkajs (Node), as an application would use it: conformance/clients/node/driver.js
runs one operation per `node` process, a JSON command on stdin and a JSON answer on
stdout. kafkajs is pinned by node/package-lock.json and installed with `npm ci` into
node/node_modules on first use (again whenever the lock file changes)."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.clients.base import OffsetSpec, Unsupported
from conformance.clients.program import Program, from_wire, to_wire
from conformance.model import Rec

NODE_DIR = Path(__file__).resolve().parent / "node"
MODULES = NODE_DIR / "node_modules"
STAMP = MODULES / ".conformance-installed"  # the sha256 of the lock file installed
LOCK = NODE_DIR.parents[2] / ".conformance" / "npm-ci.lock"  # .conformance/ is ignored by git


def ensure_installed() -> None:
    """`npm ci` into node/node_modules when it is missing or the lock file changed."""
    want = hashlib.sha256((NODE_DIR / "package-lock.json").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == want:
        return
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run may be installing right now
        if STAMP.exists() and STAMP.read_text().strip() == want:
            return
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("kafkajs driver: npm not found (Node.js and npm are needed)")
        print("[conformance] kafkajs: npm ci in conformance/clients/node", flush=True)
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"kafkajs driver: npm ci failed:\n{done.stdout}{done.stderr}")
        STAMP.write_text(want + "\n")


class KafkaJS:
    name = "kafkajs"
    codecs: tuple[str, ...] = ("none", "gzip")  # built in; snappy, lz4 and zstd need codec packages

    def __init__(self) -> None:
        self._program = Program(self.name, lambda: ["node", "driver.js"], NODE_DIR)

    def _call(self, op: str, within: float = 60.0, **args: Any) -> Any:
        ensure_installed()
        return self._program.call({"op": op, "timeout_ms": int(within * 1000), **args}, within)

    def produce(
        self,
        bootstrap: str,
        topic: str,
        recs: list[Rec],
        *,
        compression: str | None = None,
        idempotent: bool = False,
        max_request_bytes: int = 1 << 20,
    ) -> list[int]:
        """kafkajs has no request size limit of its own: `max_request_bytes` is moot."""
        if compression not in (None, *self.codecs):
            raise Unsupported(f"kafkajs has no built-in {compression} codec")
        if any(v is None for r in recs for _, v in r.headers):
            raise Unsupported("kafkajs cannot send a null header value")
        records = [to_wire(r) for r in recs]
        answer = self._call(
            "produce",
            bootstrap=bootstrap,
            topic=topic,
            records=records,
            compression=compression or "none",
            idempotent=idempotent,
        )
        return [int(o) for o in answer["offsets"]]

    def consume(
        self, bootstrap: str, topic: str, n: int, *, partition: int = 0, start: int = 0
    ) -> list[Rec]:
        answer = self._call(
            "consume",
            within=60,
            bootstrap=bootstrap,
            topic=topic,
            n=n,
            partition=partition,
            start=start,
            within_ms=30000,
        )
        return [from_wire(r) for r in answer["records"]]

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: OffsetSpec) -> int:
        if spec == "max-timestamp":
            raise Unsupported("kafkajs's admin has no max-timestamp offset lookup")
        answer = self._call(
            "list_offset", bootstrap=bootstrap, topic=topic, partition=partition, spec=spec
        )
        return int(answer["offset"])

    def group_consume(self, bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
        answer = self._call(
            "group_consume",
            within=90,
            bootstrap=bootstrap,
            topic=topic,
            group=group,
            n=n,
            within_ms=60000,
        )
        return [from_wire(r) for r in answer["records"]]

    def txn_flow(self, bootstrap: str, topic: str, txn_id: str) -> str:
        """conformance/clients/transactional.py's flow; how the zombie was fenced."""
        answer = self._call("txn_flow", bootstrap=bootstrap, topic=topic, transactional_id=txn_id)
        return str(answer["fenced"])

    def committed(self, bootstrap: str, group: str, topic: str, partition: int) -> int | None:
        answer = self._call(
            "committed", bootstrap=bootstrap, group=group, topic=topic, partition=partition
        )
        return None if answer["offset"] is None else int(answer["offset"])

    def member_loop(
        self, bootstrap: str, topic: str, group: str, stop: threading.Event,
        report: Callable[[frozenset[int]], None],
    ) -> None:  # fmt: skip
        """driver.js stays a member, printing {"assigned": [...]} after each join, until
        its stdin closes; then it leaves the group."""
        ensure_installed()
        command = {"op": "member", "timeout_ms": 900_000, "bootstrap": bootstrap,
                   "topic": topic, "group": group}  # fmt: skip
        self._program.member(command, stop, report)
