"""The cluster tier: tests against a Pulsar cluster shaped like production.

`pulsar_cluster` is a session fixture that gives a test a cluster started by the
project's own tool (tools/pulsar_cluster.py: ZooKeeper, a bookie, two brokers
and a proxy, token auth and TLS). It reuses a cluster that tool already runs
with --auth --tls, and stops the cluster at the end only if it started it. When
it starts one, it starts from an empty data dir (`start --fresh`): every run
begins alike, whatever an earlier run or a copied cache left behind.

Its tests are deselected unless the command line names tests/cluster (or a
file in it); `make test` runs them as a second step
(`tools/run_tests.py --cluster`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TOOL = [sys.executable, str(HERE.parent.parent / "tools" / "pulsar_cluster.py")]
START_TIMEOUT = 900.0  # a cold Maven cache (~234 MiB of jars) plus five JVMs on two cores


@dataclass(frozen=True)
class Endpoint:
    """One broker's or the proxy's URLs (TLS ones are set: the fixture starts --tls)."""

    service_url: str
    http_url: str
    service_url_tls: str
    http_url_tls: str


@dataclass(frozen=True)
class PulsarCluster:
    name: str
    brokers: tuple[Endpoint, ...]
    proxy: Endpoint
    ca_cert: Path
    token_files: dict[str, Path]  # role -> token file
    superuser: str
    app_role: str  # admin of app_tenant, nothing more
    limited_role: str  # produce + consume on app_namespace only
    app_tenant: str
    app_namespace: str
    system_namespace: str  # the app role's second namespace, for kop's own topics
    data_dir: Path

    def token(self, role: str) -> str:
        return self.token_files[role].read_text().strip()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep this tier out of runs that do not name it (`make test` runs all of tests/)."""
    base = config.invocation_params.dir
    if any((base / arg.split("::")[0]).resolve().is_relative_to(HERE) for arg in config.args):
        return
    mine = [item for item in items if item.path.is_relative_to(HERE)]
    if mine:
        config.hook.pytest_deselected(items=mine)
        items[:] = [item for item in items if not item.path.is_relative_to(HERE)]


def _describe() -> dict[str, object] | None:
    """The running cluster's `env --json`, if the tool has one that is healthy."""
    if subprocess.run([*TOOL, "status"], capture_output=True).returncode != 0:
        return None
    proc = subprocess.run([*TOOL, "env", "--json"], capture_output=True, text=True)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def _endpoint(urls: dict[str, str]) -> Endpoint:
    return Endpoint(
        urls["service_url"], urls["http_url"], urls["service_url_tls"], urls["http_url_tls"]
    )


@pytest.fixture(scope="session")
def pulsar_cluster() -> Iterator[PulsarCluster]:
    info = _describe()
    started = not (info and info["auth"] and info["tls"])
    if started:
        proc = subprocess.run(
            [*TOOL, "start", "--auth", "--tls", "--fresh"],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
        )
        if proc.returncode != 0:
            pytest.fail(f"tools/pulsar_cluster.py start failed:\n{proc.stdout}{proc.stderr}")
        info = _describe()
        assert info is not None, "the cluster started but `status`/`env` do not say healthy"
    assert info is not None
    roles = info["roles"]
    tokens = info["tokens"]
    brokers = info["brokers"]
    namespaces = info["app_namespaces"]
    assert isinstance(roles, dict) and isinstance(tokens, dict)
    assert isinstance(brokers, list) and isinstance(namespaces, list)
    try:
        yield PulsarCluster(
            name=str(info["cluster"]),
            brokers=tuple(_endpoint(b) for b in brokers),
            proxy=_endpoint(info["proxy"]),  # type: ignore[arg-type]
            ca_cert=Path(str(info["ca_cert"])),
            token_files={role: Path(path) for role, path in tokens.items()},
            superuser=roles["superuser"],
            app_role=roles["app"],
            limited_role=roles["limited"],
            app_tenant=str(info["app_tenant"]),
            app_namespace=namespaces[0],
            system_namespace=namespaces[1],
            data_dir=Path(str(info["data_dir"])),
        )
    finally:
        if started:
            subprocess.run([*TOOL, "stop"], capture_output=True)


@pytest.fixture(scope="module")
def tenants(
    pulsar_cluster: PulsarCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[object]:
    """One kop serving two tenants (tests/cluster/tenants.py), for a module's tests."""
    from tests.cluster.tenants import serve_tenants  # it imports this module

    yield from serve_tenants(pulsar_cluster, tmp_path_factory.mktemp("tenants"))
