"""The subscription mirror on a real Pulsar beside Pulsar applications: kop's
subscriptions carry its prefix, an application's subscription that shares a
group's name is never moved or deleted, and what a crash of kop left undone is
set right at the next start."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable

import pulsar
from confluent_kafka import Consumer as CfConsumer
from confluent_kafka import Producer as CfProducer
from confluent_kafka import TopicPartition as CfTP
from confluent_kafka.admin import AdminClient

from tests.integration.admin import create_topic
from tests.integration.conftest import PULSAR_HTTP, PULSAR_URL, KopProcess


def _stats(topic: str) -> dict[str, int]:
    """Subscriptions on partition 0 of `topic` with their backlog, as Pulsar's stats say."""
    url = f"{PULSAR_HTTP}/admin/v2/persistent/public/default/{topic}-partition-0/stats"
    stats = json.load(urllib.request.urlopen(url, timeout=10))
    return {name: s["msgBacklog"] for name, s in stats["subscriptions"].items()}


def _mirrored(topic: str) -> dict[str, int]:
    """kop's mirrored subscriptions only (its readers' are non-durable and come and go)."""
    return {k: v for k, v in _stats(topic).items() if k.startswith("kafka-group-")}


def _until(condition: Callable[[], bool], within: float, what: Callable[[], object]) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"not reached in {within}s: {what()}"
        time.sleep(0.3)


def _produce(bootstrap: str, topic: str, count: int) -> None:
    p = CfProducer({"bootstrap.servers": bootstrap})
    for i in range(count):
        p.produce(topic, f"r{i}".encode(), partition=0)
        p.flush(30)  # one record, one entry: the backlog counts records


def _commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    c = CfConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.commit(offsets=[CfTP(topic, 0, offset)], asynchronous=False)
    c.close()


def _delete_group(bootstrap: str, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the answer comes
    admin.delete_consumer_groups([group])[group].result(30)


def test_a_pulsar_applications_subscription_named_like_a_group_survives_it(
    kop: KopProcess, topic: str
) -> None:
    """A Pulsar consumer of subscription `group` reads 4 of 10 records; a Kafka group
    of the same name commits 8 and is deleted. The application's subscription is
    where it left it, and kop's own (`kafka-group-` + group) came and went."""
    create_topic(kop.bootstrap, topic, configs={"kop.pulsar.batching": "false"})
    _produce(kop.bootstrap, topic, 10)
    group = f"shared-{topic}"
    client = pulsar.Client(PULSAR_URL, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(
            f"persistent://public/default/{topic}-partition-0",
            group,
            initial_position=pulsar.InitialPosition.Earliest,
        )
        for _ in range(4):
            consumer.acknowledge(consumer.receive(10_000))
        consumer.close()
    finally:
        client.close()
    _until(lambda: _stats(topic).get(group) == 6, 30, lambda: _stats(topic))

    _commit(kop.bootstrap, group, topic, 8)
    mirrored = f"kafka-group-{group}"
    _until(lambda: _stats(topic).get(mirrored) == 2, 60, lambda: _stats(topic))
    _delete_group(kop.bootstrap, group)
    _until(lambda: mirrored not in _stats(topic), 60, lambda: _stats(topic))
    assert _stats(topic).get(group) == 6


def test_a_group_deleted_before_its_removal_was_mirrored_loses_its_subscription_at_restart(
    fresh_kop: KopProcess, topic: str
) -> None:
    """kop is killed while the removal DeleteGroups queued waits for its round (an
    hour here): the next kop finds the durable subscription no offset backs and
    removes it, and leaves the subscription of a group that still has offsets."""
    kop = fresh_kop
    create_topic(kop.bootstrap, topic, configs={"kop.pulsar.batching": "false"})
    _produce(kop.bootstrap, topic, 5)
    gone, kept = f"gone-{topic}", f"kept-{topic}"
    _commit(kop.bootstrap, gone, topic, 2)
    _commit(kop.bootstrap, kept, topic, 3)
    want = {f"kafka-group-{gone}": 3, f"kafka-group-{kept}": 2}
    _until(lambda: _mirrored(topic) == want, 60, lambda: _stats(topic))

    kop.kill9()
    kop.env["KOP_MIRROR_INTERVAL_S"] = "3600"
    kop.start()
    _delete_group(kop.bootstrap, gone)
    kop.kill9()
    assert f"kafka-group-{gone}" in _stats(topic)

    del kop.env["KOP_MIRROR_INTERVAL_S"]
    kop.start()
    _until(lambda: _mirrored(topic) == {f"kafka-group-{kept}": 2}, 60, lambda: _stats(topic))


def test_a_group_whose_id_has_plus_and_percent_is_mirrored_under_its_very_name(
    kop: KopProcess, topic: str
) -> None:
    """Pulsar decodes a subscription in an admin path twice: encoded once, `a+b`
    became `a b` and a `%` was refused (a 500 each round, never mirrored)."""
    create_topic(kop.bootstrap, topic, configs={"kop.pulsar.batching": "false"})
    _produce(kop.bootstrap, topic, 3)
    group = f"a+b 50%/{topic}"
    _commit(kop.bootstrap, group, topic, 1)
    mirrored = f"kafka-group-{group}"
    _until(lambda: _stats(topic).get(mirrored) == 2, 60, lambda: _stats(topic))
    _delete_group(kop.bootstrap, group)
    _until(lambda: mirrored not in _stats(topic), 60, lambda: _stats(topic))
