"""Pinned Go programs and Go module files from the Go module proxy, cached.

Stdlib only (runs before any virtualenv). The chart's checks need helm and
kubeconform, which are Go programs published as Go modules, and the Kubernetes
OpenAPI spec, which the `k8s.io/kubernetes` module ships: the Go module proxy
serves all three by version, so `go install mod/cmd@vX` and `go mod download
mod@vX` are the whole supply chain. Builds go into `<cache>/go-tools/NAME-vX/`
with GOBIN, beside a marker written last, so an interrupted build is redone and a
finished one is reused at once. Go's own module and build caches (GOMODCACHE,
GOCACHE) are left where Go keeps them, as Maven's ~/.m2 is for the JVM tools.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from provision import PROGRESS_EVERY, Tool, cache_dir, fail

NO_GO = "`go` is not on PATH; install Go 1.26 or newer (https://go.dev/doc/install) and re-run"


@dataclass(frozen=True)
class GoProgram:
    """A command of a Go module, built at a pinned version."""

    name: str  # "helm": the binary's name
    module: str  # "helm.sh/helm/v3"
    version: str  # "v3.22.0"
    package: str  # "cmd/helm", inside the module
    ldflags: tuple[str, ...] = ()  # e.g. -X flags for the version the binary prints

    @property
    def dir(self) -> Path:
        return cache_dir() / "go-tools" / f"{self.name}-{self.version}"

    @property
    def path(self) -> Path:
        return self.dir / self.name

    @property
    def marker(self) -> Path:
        return self.dir / "built.json"

    def is_built(self) -> bool:
        try:
            info = json.loads(self.marker.read_text())
        except (OSError, ValueError):
            return False
        return info.get("version") == self.version and os.access(self.path, os.X_OK)

    def install(self, tool: Tool) -> None:
        """`go install` into the cache unless built; progress lines while Go works."""
        label = f"{self.name} {self.version}"
        if self.is_built():
            tool.say(f"{label} already built: {self.path}")
            return
        partial = self.dir.with_name(self.dir.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        flags = ["-trimpath", "-ldflags", " ".join(("-s", "-w", *self.ldflags))]
        target = f"{self.module}/{self.package}@{self.version}"
        seconds = run_go(
            tool,
            ["install", *flags, target],
            what=f"building {label} (go install {target})",
            log=partial / "build.log",
            extra_env={"GOBIN": str(partial), "CGO_ENABLED": "0"},
        )
        (partial / "built.json").write_text(
            json.dumps({"version": self.version, "seconds": round(seconds, 1)}) + "\n"
        )
        shutil.rmtree(self.dir, ignore_errors=True)
        partial.rename(self.dir)
        tool.say(f"built {label} in {seconds:.0f} s: {self.path}")


def download(tool: Tool, module: str, version: str) -> Path:
    """`go mod download` a module version; returns its extracted (read-only) directory."""
    log = cache_dir() / "go-tools" / f"download-{module.replace('/', '_')}-{version}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    run_go(
        tool,
        ["mod", "download", "-json", f"{module}@{version}"],
        what=f"downloading {module}@{version} (go mod download)",
        log=log,
        quiet_if_fast=True,
    )
    text = log.read_text()
    info = json.loads(text[text.index("{") :])
    if info.get("Error") or not info.get("Dir"):
        fail(f"go mod download {module}@{version}: {info.get('Error', 'no directory')}")
    return Path(info["Dir"])


def run_go(
    tool: Tool,
    args: Sequence[str],
    *,
    what: str,
    log: Path,
    extra_env: dict[str, str] | None = None,
    quiet_if_fast: bool = False,
) -> float:
    """Run `nice go ARGS` (the machine is shared), output to log, a line every
    PROGRESS_EVERY s; one error line with the log's tail if it fails. Returns seconds."""
    go = shutil.which("go")
    if not go:
        fail(NO_GO)
    # GOTOOLCHAIN=local: build with the Go on PATH, never fetch another toolchain.
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-buildvcs=false", **(extra_env or {})}
    nice = [shutil.which("nice") or "nice", "-n", "10"] if shutil.which("nice") else []
    cmd = [*nice, go, *args]
    start = time.monotonic()
    if not quiet_if_fast:
        tool.say(what)
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=log.parent,  # outside any go.mod: the pinned version alone decides
        )
        next_report = start + PROGRESS_EVERY
        while proc.poll() is None:
            time.sleep(0.2)
            now = time.monotonic()
            if now >= next_report:
                if quiet_if_fast and next_report == start + PROGRESS_EVERY:
                    tool.say(what)
                next_report = now + PROGRESS_EVERY
                tool.say(f"still {what.split(' (')[0]}... {now - start:.0f} s elapsed")
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        fail(f"{shlex.join(cmd[len(nice) :])} failed (exit {proc.returncode}); see {log}", tail)
    return time.monotonic() - start
