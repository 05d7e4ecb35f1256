"""kop's registry as the tier runs it: one kop over the local Pulsar, a system namespace
and a client namespace of its own (so the global level it sets touches nobody else)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

from conformance.registry.apicurio import await_http
from conformance.targets import REPO, _free_port, _kop_env, _service, _stop


@contextlib.contextmanager
def kop_registry(log_dir: Path) -> Iterator[str]:
    with _service("pulsar"):
        nonce = uuid.uuid4().hex[:8]
        port, admin_port, registry_port = _free_port(), _free_port(), _free_port()
        env = _kop_env(0, port, admin_port, f"public/__kop-registry-{nonce}")
        env.update(KOP_SCHEMA_REGISTRY_PORT=str(registry_port), KOP_NAMESPACE=f"sr-{nonce}")
        log_dir.mkdir(parents=True, exist_ok=True)
        log = log_dir / f"kop-registry-{registry_port}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kop.cli.main", "serve"], stdout=out, stderr=out,
                env=env, cwd=REPO,
            )  # fmt: skip
        base = f"http://127.0.0.1:{registry_port}"
        try:
            await_http(base + "/subjects", proc, log, "kop", within=60)
            yield base
        finally:
            _stop([proc])
