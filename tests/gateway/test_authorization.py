"""Authorization from Pulsar's permissions, over the in-memory storage with unmodified
librdkafka clients on a SASL listener: two tenants, each role with only what Pulsar
grants it, every refusal with Kafka's code, and topics another tenant may not see
refused the same whether or not they exist."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from kop.config.settings import KopConfig
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.permissions import CONSUME, PRODUCE
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import free_port
from tests.sim.memory_admin import MemoryBackend
from tests.tls_material import TokenKeys

T = TypeVar("T")
ACME = Namespace("acme", "orders")
GLOBEX = Namespace("globex", "main")
BOTH = frozenset({PRODUCE, CONSUME})


@dataclass
class Cluster:
    gateway: Gateway
    backend: MemoryBackend
    keys: TokenKeys
    port: int

    def conf(self, role: str, ns: Namespace, **extra: Any) -> dict[str, Any]:
        return {
            "bootstrap.servers": f"127.0.0.1:{self.port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": ns.path,
            "sasl.password": "token:" + self.keys.token(role),
            "socket.timeout.ms": 10000,
            **extra,
        }


async def run(fn: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(fn, *args)


@contextlib.asynccontextmanager
async def two_tenants(tmp_path: Path, **config: Any) -> AsyncIterator[Cluster]:
    backend = MemoryBackend()
    perms = backend.permissions
    perms.admins.update({"acme": frozenset({"acme-admin"}), "globex": frozenset()})
    for ns, name in ((ACME, "t1"), (ACME, "t2"), (GLOBEX, "secret")):
        await backend.admin.serve_namespace(ns)
        await backend.admin.create_partitioned(PulsarTopic(ns, name, name), 1, {})
    await perms.grant(ACME, None, "alice", BOTH)
    await perms.grant(ACME, "t1", "carol", frozenset({CONSUME}))
    await perms.grant(GLOBEX, None, "eve", BOTH)
    keys = TokenKeys.make(tmp_path)
    port = free_port()
    settings = {
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
        "auth_token_secret_key": keys.spec,
        "admin_port": 0,
        "group_initial_rebalance_delay_ms": 0,
        "superuser_roles": "root",
        **config,
    }
    gateway = Gateway(KopConfig(**settings), backend)
    await gateway.start()
    try:
        yield Cluster(gateway, backend, keys, port)
    finally:
        await gateway.stop()


def produce(conf: dict[str, Any], topic: str, n: int = 3) -> list[int]:
    """Error codes of `n` deliveries (0: delivered)."""
    codes: list[int] = []
    once = {} if conf.get("enable.idempotence") else {"retries": 0}
    producer = Producer({**conf, "message.timeout.ms": 10000, **once})
    for i in range(n):
        producer.produce(
            topic, f"v{i}".encode(), on_delivery=lambda e, m: codes.append(e.code() if e else 0)
        )
    producer.flush(20)
    return codes


def topic_errors(conf: dict[str, Any], *names: str) -> dict[str, int]:
    admin = AdminClient(conf)
    found = {}
    for name in names:
        meta = admin.list_topics(topic=name, timeout=10)
        error = meta.topics[name].error
        found[name] = error.code() if error else 0
    return found


def listed(conf: dict[str, Any]) -> set[str]:
    return set(AdminClient(conf).list_topics(timeout=10).topics)


async def test_each_role_has_what_pulsar_grants_and_nothing_else(tmp_path: Path) -> None:
    async with two_tenants(tmp_path) as c:
        alice, carol, eve = c.conf("alice", ACME), c.conf("carol", ACME), c.conf("eve", GLOBEX)
        assert await run(produce, alice, "t1") == [0, 0, 0]
        assert await run(listed, alice) == {"t1", "t2"}
        assert await run(listed, carol) == {"t1"}  # only what it may see
        assert await run(listed, eve) == {"secret"}
        assert await run(produce, carol, "t1") == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 3
        # another tenant's topics, existing or not, are refused alike
        refused = await run(
            topic_errors, eve, "persistent://acme/orders/t1", "persistent://acme/orders/nope"
        )
        assert set(refused.values()) == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
        assert await run(produce, eve, "persistent://acme/orders/t1", 1) == [
            KafkaError.TOPIC_AUTHORIZATION_FAILED
        ]
        assert await run(produce, eve, "persistent://acme/orders/nope", 1) == [
            KafkaError.TOPIC_AUTHORIZATION_FAILED
        ]
        assert c.backend.admin  # nothing was auto-created in acme for eve
        assert "nope" not in await c.backend.admin.list_topics(ACME)


def create(conf: dict[str, Any], name: str) -> int:
    admin = AdminClient(conf)  # kept: a collected client cancels its futures
    future = admin.create_topics([NewTopic(name, 1)])[name]
    try:
        future.result(timeout=15)
    except Exception as exc:
        return int(exc.args[0].code())
    return 0


def broker_configs(conf: dict[str, Any]) -> int:
    admin = AdminClient(conf)
    future = admin.describe_configs([ConfigResource(ResourceType.BROKER, "0")])
    try:
        next(iter(future.values())).result(timeout=15)
    except Exception as exc:
        return int(exc.args[0].code())
    return 0


async def test_admin_operations_need_a_tenant_admin_and_broker_ones_a_superuser(
    tmp_path: Path,
) -> None:
    async with two_tenants(tmp_path) as c:
        assert (
            await run(create, c.conf("alice", ACME), "made")
            == KafkaError.TOPIC_AUTHORIZATION_FAILED
        )
        assert await run(create, c.conf("acme-admin", ACME), "made") == 0
        assert await run(create, c.conf("acme-admin", GLOBEX), "made") == (
            KafkaError.TOPIC_AUTHORIZATION_FAILED
        )
        assert await run(broker_configs, c.conf("acme-admin", ACME)) == (
            KafkaError.CLUSTER_AUTHORIZATION_FAILED
        )
        assert await run(broker_configs, c.conf("root", ACME)) == 0
        # an idempotent producer needs `produce` somewhere in its namespace
        carol = c.conf("carol", ACME, **{"enable.idempotence": True})
        assert await run(fatal_of, carol) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        idem = c.conf("alice", ACME, **{"enable.idempotence": True})
        assert await run(produce, idem, "t1") == [0] * 3


def fatal_of(conf: dict[str, Any]) -> int:
    """The fatal error an idempotent producer meets getting its producer id."""
    producer = Producer({**conf, "message.timeout.ms": 10000})
    producer.produce("t1", b"v")
    try:
        producer.flush(20)
    except Exception as exc:
        return int(exc.args[0].code())
    return 0


def consume_group(conf: dict[str, Any], topic: str, group: str, want: int) -> tuple[int, int]:
    """(records read, error code seen first or 0) for a group member that commits."""
    consumer = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    seen, error = 0, 0
    deadline = time.monotonic() + 20
    try:
        while seen < want and not error and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                error = msg.error().code()
            else:
                seen += 1
        if seen:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen, error


def committed(conf: dict[str, Any], topic: str, group: str) -> int:
    consumer = Consumer({**conf, "group.id": group})
    try:
        return int(consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset)
    finally:
        consumer.close()


async def test_groups_belong_to_their_tenant_and_follow_subscription_permissions(
    tmp_path: Path,
) -> None:
    async with two_tenants(tmp_path) as c:
        await c.backend.permissions.set_subscription_roles(
            ACME, "kafka-group-reserved", frozenset({"alice"})
        )
        alice, eve = c.conf("alice", ACME), c.conf("eve", GLOBEX)
        await run(produce, alice, "t1", 3)
        await run(produce, eve, "secret", 2)
        assert await run(consume_group, alice, "t1", "g", 3) == (3, 0)
        assert await run(consume_group, eve, "secret", "g", 2) == (2, 0)
        # the same group id, two groups: each tenant's offsets are its own
        assert await run(committed, alice, "t1", "g") == 3
        assert await run(committed, eve, "secret", "g") == 2
        groups = c.gateway.groups
        assert groups is not None
        assert {"//acme/orders/g", "//globex/main/g"} <= set(groups.offsets.groups())
        # a subscription Pulsar reserves for alice (below) is not carol's
        seen, error = await run(consume_group, c.conf("carol", ACME), "t1", "reserved", 1)
        assert (seen, error) == (0, KafkaError.GROUP_AUTHORIZATION_FAILED)
        assert await run(consume_group, alice, "t1", "reserved", 3) == (3, 0)


async def test_a_revoke_in_pulsar_holds_within_the_refresh_bound(tmp_path: Path) -> None:
    async with two_tenants(tmp_path, authorization_refresh_s=0.5) as c:
        alice = c.conf("alice", ACME)
        assert await run(produce, alice, "t2", 1) == [0]
        await c.backend.permissions.grant(ACME, None, "alice", frozenset({CONSUME}))
        deadline = time.monotonic() + 5
        while await run(produce, alice, "t2", 1) != [KafkaError.TOPIC_AUTHORIZATION_FAILED]:
            assert time.monotonic() < deadline, "revoke not in force after 5 s"


ADMIN_TOKEN = "admin-http-token-of-the-tests"


def admin_get(port: int, path: str, token: str | None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
            json_body = resp.headers.get_content_type() == "application/json"
            return resp.status, json.loads(body) if json_body else body
    except urllib.error.HTTPError as exc:
        return exc.code, None


async def test_the_admin_http_shows_a_role_what_it_may_see(tmp_path: Path) -> None:
    """A role sees its own groups and topics; /metrics and /v1/instances (every
    tenant's) only a superuser or the admin token; without a bearer only the probes."""
    port = free_port()
    async with two_tenants(tmp_path, admin_port=port, admin_token=ADMIN_TOKEN) as c:
        alice, eve = c.conf("alice", ACME), c.conf("eve", GLOBEX)
        await run(produce, alice, "t1", 2)
        await run(produce, eve, "secret", 2)
        assert await run(consume_group, alice, "t1", "g", 2) == (2, 0)
        assert await run(consume_group, eve, "secret", "g", 2) == (2, 0)
        token = c.keys.token
        assert (await run(admin_get, port, "/v1/groups", None))[0] == 401
        assert (await run(admin_get, port, "/v1/groups", "not-a-jwt"))[0] == 401
        _, mine = await run(admin_get, port, "/v1/groups", token("alice"))
        assert [g["group"] for g in mine["groups"]] == ["//acme/orders/g"]
        _, every = await run(admin_get, port, "/v1/groups", token("root"))
        assert {g["group"] for g in every["groups"]} == {"//acme/orders/g", "//globex/main/g"}
        theirs = "/v1/groups/" + urllib.parse.quote("//globex/main/g", safe="")
        assert (await run(admin_get, port, theirs, token("alice")))[0] == 404
        assert (await run(admin_get, port, theirs, token("eve")))[0] == 200
        _, topics = await run(admin_get, port, "/v1/topics", token("eve"))
        assert set(topics["partitions"]) == {"persistent://globex/main/secret-partition-0"}
        for path in ("/healthz", "/readyz"):
            assert (await run(admin_get, port, path, None))[0] == 200  # probes need none
        for path in ("/metrics", "/v1/instances"):
            assert (await run(admin_get, port, path, None))[0] == 401  # loopback or not
            assert (await run(admin_get, port, path, token("alice")))[0] == 403
            assert (await run(admin_get, port, path, token("root")))[0] == 200
            assert (await run(admin_get, port, path, ADMIN_TOKEN))[0] == 200
        _, every = await run(admin_get, port, "/v1/groups", ADMIN_TOKEN)
        assert {g["group"] for g in every["groups"]} == {"//acme/orders/g", "//globex/main/g"}
        assert (await run(admin_get, port, theirs, ADMIN_TOKEN))[0] == 200
        _, topics = await run(admin_get, port, "/v1/topics", ADMIN_TOKEN)
        assert set(topics["partitions"]) == {
            "persistent://acme/orders/t1-partition-0",
            "persistent://globex/main/secret-partition-0",
        }
