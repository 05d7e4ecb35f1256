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
# broker (about 1 in 8 for 4 partitions). Over this many topics, one spreads
# when both brokers have been up all along.
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


def spread_over_both_brokers(cluster: PulsarCluster, topic: str) -> None:
    """Make sure both brokers own some of the topic's partitions: if one owns all, its
    partition 0's bundle is unloaded to the other broker (Pulsar's `destinationBroker`),
    as an operator places a bundle. Partitions land in bundles by hash and the load
    manager places bundles by its last load reports, so the spread cannot be hoped for:
    after a broker was killed and restarted, six new topics in a row and a namespace
    unload still left every partition on one broker (CI, stop 46)."""
    deadline = time.monotonic() + 60
    moved = False
    while len(set(by_partition := owners(cluster, topic))) < 2:
        assert time.monotonic() < deadline, f"{topic} stayed on one broker: {by_partition}"
        if not moved:
            other = next(b.http_url for b in cluster.brokers if b.http_url != by_partition[0])
            _move_bundle_of(cluster, f"{topic}-partition-0", other.removeprefix("http://"))
            moved = True
        time.sleep(0.5)


def _move_bundle_of(cluster: PulsarCluster, partition: str, broker_id: str) -> None:
    admin = cluster.brokers[0].http_url
    path = f"persistent/{cluster.app_namespace}/{partition}"
    status, bundle = http(cluster, "GET", f"{admin}/lookup/v2/topic/{path}/bundle",
                          cluster.token(cluster.app_role))  # fmt: skip
    assert status == 200, (status, bundle)
    url = f"{admin}/admin/v2/namespaces/{cluster.app_namespace}/{bundle}/unload"
    status, body = http(cluster, "PUT", f"{url}?destinationBroker={broker_id}",
                        cluster.token(cluster.superuser))  # fmt: skip
    assert status == 204, (status, body)
