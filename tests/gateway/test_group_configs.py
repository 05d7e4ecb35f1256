"""A group's configs (`kafka-configs --entity-type groups`) over the wire: described with
the broker-wide defaults, set and deleted with IncrementalAlterConfigs, refused with
Kafka's INVALID_CONFIG when unknown, out of bounds or not honoured, kept in Pulsar so
another instance applies them, used by the group's heartbeats, and each tenant's own."""

from __future__ import annotations

import asyncio
import datetime
import time
from pathlib import Path
from typing import Any

from kio.schema.describe_configs.v4.request import DescribeConfigsResource
from kio.schema.incremental_alter_configs.v1.request import AlterableConfig, AlterConfigsResource
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i8, i32

from conformance.clients.raw import RawClient
from kop.groups.group_config_book import LocalGroupConfigs
from kop.storage.naming import Namespace
from tests.gateway.test_authorization import ACME, GLOBEX, two_tenants
from tests.gateway.test_groups_across_instances import two_instances

GROUP = 32
SET, DELETE, APPEND = 0, 1, 2
INVALID_CONFIG, GROUP_AUTHORIZATION_FAILED = 40, 30


def describe(client: RawClient, group: str) -> dict[str, tuple[str, int]]:
    """name -> (value, source) of the group's configs."""
    got = client.request(32, 4, resources=(DescribeConfigsResource(
        resource_type=i8(GROUP), resource_name=group, configuration_keys=None,
    ),), include_synonyms=True, include_documentation=False)  # fmt: skip
    (result,) = got.results
    assert result.error_code == 0, result
    return {c.name: (c.value, int(c.config_source)) for c in result.configs}


def alter(
    client: RawClient, group: str, *ops: tuple[str, int, str | None], dry: bool = False
) -> tuple[int, str | None]:
    configs = tuple(
        AlterableConfig(name=name, config_operation=i8(op), value=value) for name, op, value in ops
    )
    got = client.request(44, 1, resources=(AlterConfigsResource(
        resource_type=i8(GROUP), resource_name=group, configs=configs,
    ),), validate_only=dry)  # fmt: skip
    (r,) = got.responses
    return int(r.error_code), r.error_message


async def test_set_described_deleted_and_seen_by_another_instance() -> None:
    async with two_instances() as (one, other, backend):
        here, there = RawClient(one.kafka_port), RawClient(other.kafka_port)
        before = await asyncio.to_thread(describe, here, "orders")
        assert before["share.auto.offset.reset"] == ("latest", 5)
        assert before["consumer.session.timeout.ms"] == ("45000", 5)
        assert len(before) == 11  # the nine of Kafka 4.3 kop applies, and KIP-1191's two
        assert before["share.renew.acknowledge.enable"] == ("true", 5)
        assert await asyncio.to_thread(describe, there, "orders") == before  # a copy there now

        ops = [("share.auto.offset.reset", SET, "earliest"),
               ("consumer.session.timeout.ms", SET, "50000")]  # fmt: skip
        assert await asyncio.to_thread(alter, here, "orders", *ops, dry=True) == (0, None)
        assert await asyncio.to_thread(describe, here, "orders") == before  # only checked
        assert await asyncio.to_thread(alter, here, "orders", *ops) == (0, None)
        after = await asyncio.to_thread(describe, here, "orders")
        assert after["share.auto.offset.reset"] == ("earliest", 8)
        assert after["consumer.session.timeout.ms"] == ("50000", 8)
        assert after["share.session.timeout.ms"] == ("45000", 5)
        assert isinstance(backend.group_configs, LocalGroupConfigs)
        assert backend.group_configs.records == {
            (Namespace("public", "default"), "orders"):
                '{"consumer.session.timeout.ms": "50000", "share.auto.offset.reset": "earliest"}'
        }  # fmt: skip

        # the other instance reads Pulsar again once its copy is older than 5 s
        started = time.monotonic()
        while await asyncio.to_thread(describe, there, "orders") != after:
            assert time.monotonic() - started < 15, "the other instance never saw the configs"
            await asyncio.sleep(0.5)

        deleted = ("consumer.session.timeout.ms", DELETE, None)
        assert await asyncio.to_thread(alter, there, "orders", deleted) == (0, None)
        again = await asyncio.to_thread(describe, there, "orders")
        assert again["consumer.session.timeout.ms"] == ("45000", 5)
        assert again["share.auto.offset.reset"] == ("earliest", 8)


async def test_bad_configs_are_refused_whole_with_invalid_config() -> None:
    async with two_instances() as (one, _other, backend):
        client = RawClient(one.kafka_port)
        cases: list[tuple[tuple[str, int, str | None], str]] = [
            (("no.such.config", SET, "1"), "Unknown group config name: no.such.config"),
            (("consumer.session.timeout.ms", SET, "1000"),
             "consumer.session.timeout.ms must be greater than or equal to "
             "group.consumer.min.session.timeout.ms"),
            (("share.delivery.count.limit", SET, "11"),
             "share.delivery.count.limit must be less than or equal to "
             "group.share.max.delivery.count.limit"),
            (("share.record.lock.duration.ms", SET, "999"), "Value must be at least 1000"),
            (("share.delivery.count.limit", SET, "many"), "Not a number of type INT"),
            (("share.auto.offset.reset", SET, "newest"), "must be either 'earliest', 'latest'"),
            (("share.renew.acknowledge.enable", SET, "yes"),
             "Expected value to be either true or false"),
            (("streams.session.timeout.ms", SET, "50000"), "serves no streams groups"),
            (("share.record.lock.duration.ms", APPEND, "20000"), "is not LIST"),
        ]  # fmt: skip
        for op, why in cases:
            fine = ("share.heartbeat.interval.ms", SET, "6000")
            code, message = await asyncio.to_thread(alter, client, "g", fine, op)
            assert code == INVALID_CONFIG and message is not None and why in message, (op, message)
        assert backend.group_configs.records == {}  # nothing of a refused request is kept


async def test_a_consumer_groups_heartbeat_answers_with_its_own_interval() -> None:
    async with two_instances() as (one, _other, _backend):
        client = RawClient(one.kafka_port)
        paced, unpaced = [g for g in (f"grp-{i}" for i in range(200))
                          if one.groups is not None and one.groups.coordinates(g)][:2]  # fmt: skip
        interval = ("consumer.heartbeat.interval.ms", SET, "7000")
        assert await asyncio.to_thread(alter, client, paced, interval) == (0, None)
        for group, ms in ((paced, 7000), (unpaced, 5000)):
            got = await asyncio.to_thread(client.request, 68, 0, **_join(group))
            assert got.error_code == 0, got
            assert got.heartbeat_interval == datetime.timedelta(milliseconds=ms)


def _join(group: str) -> dict[str, Any]:
    return dict(
        group_id=GroupId(group), member_id="m-" + group, member_epoch=i32(0), instance_id=None,
        rack_id=None, rebalance_timeout=datetime.timedelta(seconds=30),
        subscribed_topic_names=(TopicName("hot"),), server_assignor=None, topic_partitions=(),
    )  # fmt: skip


async def test_each_tenant_alters_its_own_groups_and_only_its_admins_may(tmp_path: Path) -> None:
    async with two_tenants(tmp_path) as cluster:

        def client(role: str, ns: Namespace) -> RawClient:
            c = RawClient(cluster.port)
            answer = c.sasl_plain(ns.path, "token:" + cluster.keys.token(role))
            assert answer.error_code == 0, answer
            return c

        alice, admin, eve = (await asyncio.gather(
            asyncio.to_thread(client, "alice", ACME), asyncio.to_thread(client, "acme-admin", ACME),
            asyncio.to_thread(client, "eve", GLOBEX),
        ))  # fmt: skip
        earliest = ("share.auto.offset.reset", SET, "earliest")
        code, message = await asyncio.to_thread(alter, alice, "g", earliest)
        assert code == GROUP_AUTHORIZATION_FAILED and message and "admin of tenant acme" in message
        assert await asyncio.to_thread(alter, admin, "g", earliest) == (0, None)
        assert (await asyncio.to_thread(describe, alice, "g"))["share.auto.offset.reset"] == (
            "earliest", 8,
        )  # fmt: skip
        # eve's `g` is globex's group: acme's configs are not hers to see or change
        assert (await asyncio.to_thread(describe, eve, "g"))["share.auto.offset.reset"] == (
            "latest", 5,
        )  # fmt: skip
        code, _ = await asyncio.to_thread(alter, eve, "g", earliest)
        assert code == GROUP_AUTHORIZATION_FAILED  # globex has no admin role for eve
        assert set(cluster.backend.group_configs.records) == {(ACME, "g")}
