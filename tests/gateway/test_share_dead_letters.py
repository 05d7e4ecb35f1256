"""Where a share group's dead letters go (kop/api/dead_letter_writes.py), on running
gateways over the in-memory storage: Kafka's checks of the topic (KIP-1191), each
refusal with Kafka's message and nothing written; the letters written to partition
`source % partitions` through its leader, which is another instance for half of the
partitions when there are two (the write crosses over the instances' own connections)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from conformance.clients.raw import RawClient
from kop.api.dead_letter_writes import DeadLetterRules, DeadLetterWrites
from kop.groups.share.dead_letters import DeadLetterError, DeadLetterPolicy, letters
from kop.groups.share.records import Dead, DeadCause
from kop.protocol.records import Record, build_batch, iter_batches
from kop.sasl.peer_client import PeerClient
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.permissions import CONSUME
from kop.storage.types import StorageError
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import gateway_with_hot_topic, until
from tests.gateway.test_groups_across_instances import two_instances
from tests.sim.memory_admin import MemoryBackend

NS = Namespace("public", "default")
POLICY = DeadLetterPolicy("public/default/g", "g", "dlq.hot", copy=True)
OPTED_IN = {"kafka.errors.deadletterqueue.group.enable": "true"}


def _letters(partition: int, *offsets: int, policy: DeadLetterPolicy = POLICY) -> Any:
    dead = [Dead(o, 0, 2, DeadCause.REJECTED) for o in offsets]
    sources = {o: Record(o, 0, b"k", f"v{o}".encode()) for o in offsets}
    return letters(policy, "hot", partition, dead, sources, now_ms=1_700_000_000_000)


def _sink(gateway: Gateway) -> DeadLetterWrites:
    sink = gateway.running.services.share_partitions.dead_letters
    assert isinstance(sink, DeadLetterWrites)
    return sink


async def _topic(backend: MemoryBackend, name: str, partitions: int, opted_in: bool) -> None:
    await backend.admin.create_partitioned(
        PulsarTopic(NS, name, name), partitions, OPTED_IN if opted_in else {}
    )


async def _read(port: int, topic: str, partition: int) -> list[Record]:
    client = RawClient(port)
    try:
        fields = RawClient.fetch_fields(topic, 0, partition)
        answer = await asyncio.to_thread(client.request, 1, 12, **fields)
    finally:
        client.close()
    part = answer.responses[0].partitions[0]
    assert part.error_code == 0, part
    return list(iter_batches(bytes(part.records or b"")))


@pytest.mark.parametrize(
    ("name", "exists", "opted_in", "message"),
    [
        ("__dlq", True, True, "Configured DLQ topic name in share group: g cannot start with "
         "__, topic: __dlq."),
        ("dlq.off", True, False, "DLQ is not enabled on configured DLQ topic for share group: "
         "g, topic: dlq.off."),
        ("dlq.none", False, False, "DLQ topic does not exist and auto create is disabled on "
         "cluster for share group: g, topic: dlq.none."),
        ("letters", True, True, "Configured DLQ topic name does not comply with the DLQ topic "
         "prefix in share group: g, topic: letters, prefix: dlq.."),
    ],
)  # fmt: skip
async def test_kafkas_rules_refuse_a_topic_with_its_message(
    name: str, exists: bool, opted_in: bool, message: str
) -> None:
    async with gateway_with_hot_topic(1) as (gateway, backend):
        if exists:
            await _topic(backend, name, 1, opted_in)
        sink = _sink(gateway)
        sink_policy = DeadLetterPolicy(POLICY.group_key, "g", name)
        with pytest.raises(DeadLetterError) as refused:
            await sink.write(_letters(0, 4, policy=sink_policy))
        assert str(refused.value) == message
        assert sink.written == 0


async def test_letters_go_to_the_source_partition_modulo_the_topics_partitions() -> None:
    async with gateway_with_hot_topic(1) as (gateway, backend):
        await _topic(backend, "dlq.hot", 2, opted_in=True)
        await _sink(gateway).write(_letters(3, 4, 7))  # source partition 3: into partition 1
        got = await _read(gateway.kafka_port, "dlq.hot", 1)
        assert [(r.offset, r.key, r.value) for r in got] == [(0, b"k", b"v4"), (1, b"k", b"v7")]
        headers = dict(got[1].headers)
        assert headers["__dlq.errors.offset"] == b"7"
        assert headers["__dlq.errors.partition"] == b"3"
        assert await _read(gateway.kafka_port, "dlq.hot", 0) == []


async def test_a_missing_topic_is_created_opted_in_where_the_cluster_allows() -> None:
    async with gateway_with_hot_topic(
        1,
        errors_deadletterqueue_auto_create_topics_enable=True,
        errors_deadletterqueue_topic_name_prefix="",
    ) as (gateway, _backend):
        policy = DeadLetterPolicy(POLICY.group_key, "g", "letters", copy=True)
        await _sink(gateway).write(_letters(0, 1, policy=policy))
        view = await gateway.running.services.catalog.describe(
            PulsarTopic(NS, "letters", "letters")
        )
        assert view is not None and view.configs["errors.deadletterqueue.group.enable"] == "true"
        assert [r.value for r in await _read(gateway.kafka_port, "letters", 0)] == [b"v1"]


async def test_letters_for_a_partition_led_elsewhere_cross_to_its_leader() -> None:
    """With authorization on, and a role that may read the topic but not write it: the
    instance leading the partition takes the write of the other (proven by the cluster
    secret) as kop's own; the same Produce from a client is refused."""
    async with two_instances(authorization_enabled=True, anonymous_role="anon") as (
        owner, other, backend,
    ):  # fmt: skip
        await backend.permissions.grant(NS, None, "anon", frozenset({CONSUME}))
        await _topic(backend, "dlq.hot", 4, opted_in=True)
        topic = PulsarTopic(NS, "dlq.hot", "dlq.hot")
        ownership = other.running.services.ownership
        await until(lambda: len({ownership.owner(topic.partition(p)) for p in range(4)}) == 2, 5)
        elsewhere = next(p for p in range(4) if not ownership.mine(topic.partition(p)))
        led_by = owner if not ownership.mine(topic.partition(elsewhere)) else other
        client = RawClient(led_by.kafka_port)
        fields = client.produce_fields("dlq.hot", build_batch([Record(0, 0, None, b"forged")]))
        (data,) = fields["topic_data"]
        (part,) = data.partition_data
        part = dataclasses.replace(part, index=elsewhere)
        fields["topic_data"] = (dataclasses.replace(data, partition_data=(part,)),)
        refused = await asyncio.to_thread(client.request, 0, 9, **fields)
        client.close()
        assert refused.responses[0].partition_responses[0].error_code == 29  # TOPIC_AUTHORIZATION
        await _sink(other).write(_letters(elsewhere, 9))
        got = await _read(led_by.kafka_port, "dlq.hot", elsewhere)
        assert [(r.value, dict(r.headers)["__dlq.errors.offset"]) for r in got] == [(b"v9", b"9")]


async def test_pulsar_away_or_a_slow_leader_end_in_a_refused_letter_not_a_crash() -> None:
    """What the sink meets below it (Pulsar's admin away, a write that does not end) is
    a DeadLetterError within its bound: the record is archived without its letter, and
    the acknowledgement (or every share-partition's lock expiry) is not held for ever."""
    async with gateway_with_hot_topic(1) as (gateway, backend):
        await _topic(backend, "dlq.hot", 1, opted_in=True)
        services = gateway.running.services

        async def away(_topic: object) -> None:
            raise StorageError("Pulsar's admin is away")

        sink = DeadLetterWrites(services, PeerClient("t"), DeadLetterRules(), backoff_s=0.01)
        real = services.catalog.describe
        services.catalog.describe = away  # type: ignore[assignment,method-assign]
        with pytest.raises(DeadLetterError, match="away"):
            await sink.write(_letters(0, 1))
        services.catalog.describe = real  # type: ignore[method-assign]

        async def stuck(*_args: object) -> None:
            await asyncio.Event().wait()

        slow = DeadLetterWrites(services, PeerClient("t"), DeadLetterRules(), within_s=0.2)
        slow._produce = stuck  # type: ignore[method-assign]
        with pytest.raises(DeadLetterError, match=r"within 0\.2 s"):
            await slow.write(_letters(0, 1))
        assert sink.written == slow.written == 0
