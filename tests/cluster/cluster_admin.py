"""Pulsar's admin REST as the cluster tier's tests use it: as a given role, over TLS
with the cluster's CA, and where a topic's partitions live."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

from tests.cluster.conftest import PulsarCluster

PARTITIONS = 4
# Partitions land in namespace bundles by hash, and the load manager spreads
# bundles over the brokers, so a topic's partitions could still all land on one
# broker (about 1 in 8 for 4 partitions). Over this many topics, one spreads.
SPREAD_ATTEMPTS = 6


def http(
    cluster: PulsarCluster,
    method: str,
    url: str,
    token: str | None = None,
    body: object = None,
) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    ctx = ssl.create_default_context(cafile=str(cluster.ca_cert))
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx)
    )
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def owners(cluster: PulsarCluster, topic: str) -> list[str]:
    """The HTTP URL of the broker that owns each partition (a lookup assigns an owner)."""
    admin = cluster.brokers[0].http_url
    token = cluster.token(cluster.app_role)
    out = []
    for i in range(PARTITIONS):
        path = f"persistent/{cluster.app_namespace}/{topic}-partition-{i}"
        status, body = http(cluster, "GET", f"{admin}/lookup/v2/topic/{path}", token)
        assert status == 200, (status, body)
        out.append(json.loads(body)["httpUrl"])
    return out


def create_partitioned(cluster: PulsarCluster, topic: str) -> None:
    url = f"{cluster.brokers[0].http_url}/admin/v2/persistent/{cluster.app_namespace}/{topic}"
    status, body = http(
        cluster, "PUT", f"{url}/partitions", cluster.token(cluster.app_role), PARTITIONS
    )
    assert status == 204, (status, body)
