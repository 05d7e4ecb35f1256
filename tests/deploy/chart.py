"""Driving helm and kubeconform on helm/kop for the chart tests, without a cluster.

The tools are the pinned builds of tools/helm.py (`make helm-tools`); a missing
one fails the test with the command that builds it, never a skip.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "kop"
CI_VALUES = sorted((CHART / "ci").glob("*.yaml"))
NAMESPACE = "kafka"


@dataclass(frozen=True)
class Tools:
    helm: str
    kubeconform: str
    schema_location: str
    kubernetes_version: str


@cache
def tools() -> Tools:
    run = subprocess.run(
        [sys.executable, str(REPO / "tools" / "helm.py"), "paths"], capture_output=True, text=True
    )
    if run.returncode != 0:
        pytest.fail(
            f"the chart's tools are not built: {run.stderr.strip()}\n"
            "build them with `make helm-tools` (python3 tools/helm.py build)",
            pytrace=False,
        )
    return Tools(**json.loads(run.stdout))


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    run = subprocess.run([tools().helm, *args], capture_output=True, text=True, cwd=REPO)
    if check and run.returncode != 0:
        pytest.fail(f"helm {' '.join(args)} failed:\n{run.stdout}{run.stderr}", pytrace=False)
    return run


def value_args(values: tuple[Path, ...] = (), sets: tuple[str, ...] = ()) -> list[str]:
    args: list[str] = []
    for path in values:
        args += ["-f", str(path)]
    for item in sets:
        args += ["--set", item]
    return args


@dataclass(frozen=True)
class Rendered:
    """What `helm template` printed, and its documents."""

    text: str
    docs: tuple[dict[str, Any], ...]

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [d for d in self.docs if d["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        found = [d for d in self.kinds(kind) if name is None or d["metadata"]["name"] == name]
        assert len(found) == 1, (
            f"{len(found)} {kind} named {name}: {[d['metadata'] for d in found]}"
        )
        return found[0]

    @property
    def container(self) -> dict[str, Any]:
        containers = self.one("StatefulSet")["spec"]["template"]["spec"]["containers"]
        (kop,) = [c for c in containers if c["name"] == "kop"]  # sidecars beside it
        return dict(kop)

    @property
    def kop_toml(self) -> dict[str, Any]:
        return tomllib.loads(self.one("ConfigMap", "kop")["data"]["kop.toml"])


@cache  # the same values render the same; tests only read what they get
def render(
    *values: Path, sets: tuple[str, ...] = (), release: str = "kop", chart: Path = CHART
) -> Rendered:
    text = helm(
        "template", release, str(chart), "--namespace", NAMESPACE, *value_args(values, sets)
    ).stdout
    docs = tuple(d for d in yaml.safe_load_all(text) if d)
    return Rendered(text, docs)


def kubeconform(manifests: str) -> tuple[int, dict[str, Any]]:
    """kubeconform -strict against the pinned release's schemas: exit code and summary.
    ServiceMonitor and PrometheusRule are the Prometheus Operator's CRDs and Certificate
    is cert-manager's, with no schema among Kubernetes' own; their tests check them."""
    t = tools()
    run = subprocess.run(
        [
            t.kubeconform,
            "-strict",
            "-summary",
            "-output",
            "json",
            "-kubernetes-version",
            t.kubernetes_version,
            "-schema-location",
            t.schema_location,
            "-skip",
            "ServiceMonitor,PrometheusRule,Certificate",
        ],
        input=manifests,
        capture_output=True,
        text=True,
    )
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"kubeconform printed no report:\n{run.stdout}{run.stderr}", pytrace=False)
    return run.returncode, report
