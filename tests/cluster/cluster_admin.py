"""Pulsar's admin REST as the cluster tier's tests use it: as a given role, over TLS
with the cluster's CA, and where a topic's partitions live."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

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
    """One admin call; a broker's redirect to the owner of what it names (307) is
    followed with the same method, body and token, as Pulsar's own admin client does
    (urllib follows no redirect of a PUT)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    ctx = ssl.create_default_context(cafile=str(cluster.ca_cert))
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx), _NoRedirect
    )
    for _ in range(5):
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with opener.open(req, timeout=30) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            if e.code in (307, 308) and e.headers.get("Location"):
                url = urllib.parse.urljoin(url, e.headers["Location"])
                continue
            return e.code, e.read().decode(errors="replace")
    return 508, f"{method} {url}: too many redirects"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


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
    # Kept for good, as kop keeps the topics it creates by their retention.ms. Without a
    # retention policy Pulsar deletes a ledger once every subscription has acknowledged
    # it, kop's mirror of a group that read everything included: a broker killed mid-test
    # closes a ledger, the next trim (every 120 s) deletes it, and the log start moves
    # past records the test then reads back (seen in CI: log start 186 after a restart).
    forever = {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}
    # Topic policies go through the namespace's `__change_events` system topic: right
    # after a broker was killed and restarted (an earlier test), Pulsar answers 500 until
    # its writer there recovers (seen in make test). The POST is idempotent.
    deadline = time.monotonic() + 120
    while True:
        status, body = http(
            cluster, "POST", f"{url}/retention", cluster.token(cluster.app_role), forever
        )
        if status < 500 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert status == 204, (status, body)


def rebalance(cluster: PulsarCluster) -> None:
    """Unload the application namespace's bundles, as an operator does once a broker is
    back: the load manager assigns them again over every live broker (while one was
    down, the other took all of them, and new topics would all land there)."""
    url = f"{cluster.brokers[0].http_url}/admin/v2/namespaces/{cluster.app_namespace}/unload"
    status, body = http(cluster, "PUT", url, cluster.token(cluster.superuser))
    assert status == 204, (status, body)
