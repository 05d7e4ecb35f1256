"""The cluster tools/pulsar_cluster.py starts has the shape kop's users run.

What kop will depend on, checked with Pulsar's own interfaces (admin REST and
the official Python client), not with kop: several brokers that each own part
of a topic, a proxy in front of them reached over TLS, token authentication,
and authorization that refuses what a role was not granted.
"""

from __future__ import annotations

import json
import uuid

import pulsar
import pytest

from tests.cluster.cluster_admin import (
    PARTITIONS,
    SPREAD_ATTEMPTS,
    create_partitioned,
    http,
    owners,
)
from tests.cluster.conftest import PulsarCluster

# Covers the session fixture's cluster start (up to 15 min with a cold Maven cache).
pytestmark = pytest.mark.timeout(1200)


def test_two_brokers_are_registered(pulsar_cluster: PulsarCluster) -> None:
    c = pulsar_cluster
    status, body = http(
        c, "GET", f"{c.brokers[0].http_url}/admin/v2/brokers/{c.name}", c.token(c.superuser)
    )
    assert status == 200, (status, body)
    expected = {b.http_url.removeprefix("http://") for b in c.brokers}
    assert len(expected) == 2
    assert set(json.loads(body)) == expected


def test_a_partitioned_topic_is_owned_by_both_brokers(pulsar_cluster: PulsarCluster) -> None:
    c = pulsar_cluster
    seen = []
    for _ in range(SPREAD_ATTEMPTS):  # the first test of the tier: no broker was killed yet
        topic = f"spread-{uuid.uuid4().hex[:8]}"
        create_partitioned(c, topic)
        by_partition = owners(c, topic)
        seen.append(by_partition)
        if set(by_partition) == {b.http_url for b in c.brokers}:
            return
    pytest.fail(f"no {PARTITIONS}-partition topic spread over both brokers: {seen}")


def test_produce_and_consume_through_the_proxy_over_tls_with_the_app_token(
    pulsar_cluster: PulsarCluster,
) -> None:
    c = pulsar_cluster
    topic = f"proxy-{uuid.uuid4().hex[:8]}"
    create_partitioned(c, topic)
    client = pulsar.Client(
        c.proxy.service_url_tls,
        authentication=pulsar.AuthenticationToken(c.token(c.app_role)),
        tls_trust_certs_file_path=str(c.ca_cert),
        tls_validate_hostname=True,
        operation_timeout_seconds=30,
    )
    try:
        full = f"persistent://{c.app_namespace}/{topic}"
        consumer = client.subscribe(
            full, "cluster-test", initial_position=pulsar.InitialPosition.Earliest
        )
        producer = client.create_producer(full)
        sent = {f"message-{i}".encode() for i in range(20)}
        for value in sorted(sent):
            producer.send(value)
        received = set()
        for _ in sent:
            msg = consumer.receive(timeout_millis=30_000)
            received.add(msg.data())
            consumer.acknowledge(msg)
        assert received == sent
    finally:
        client.close()


def test_an_unauthenticated_admin_call_is_refused_with_401(pulsar_cluster: PulsarCluster) -> None:
    c = pulsar_cluster
    for base in (c.brokers[0].http_url, c.brokers[1].http_url_tls, c.proxy.http_url_tls):
        status, body = http(c, "GET", f"{base}/admin/v2/tenants")
        assert status == 401, (base, status, body)


def test_the_limited_role_may_not_change_a_namespace_policy(
    pulsar_cluster: PulsarCluster,
) -> None:
    c = pulsar_cluster
    ttl = f"{c.brokers[0].http_url}/admin/v2/namespaces/{c.app_namespace}/messageTTL"
    status, body = http(c, "POST", ttl, c.token(c.limited_role), 60)
    assert status == 403, (status, body)
    assert "Unauthorized" in body
    # The tenant admin may: the refusal is about the role, not the request.
    app = c.token(c.app_role)
    status, body = http(c, "POST", ttl, app, 60)
    assert status == 204, (status, body)
    status, body = http(c, "DELETE", ttl, app)
    assert status == 204, (status, body)
