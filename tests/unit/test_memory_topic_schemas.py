"""tests/sim/memory_schemas.py: the in-memory twin of Pulsar's schema registry keeps
Pulsar's numbering, equality, strategy order and refusals (the integration test
tests/integration/test_pulsar_schemas.py holds the real Pulsar to the same)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.schemas import SchemaRefused
from kop.storage.types import AdminError, StorageUnavailable
from tests.sim.memory_log import MemoryLog
from tests.sim.memory_schemas import MemoryTopicSchemas

NS = Namespace("public", "default")
TOPIC = PulsarTopic(NS, "users", "users")


def avro(*fields: dict[str, Any], name: str = "User", **extra: Any) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "t", **extra, "fields": fields})


NAME = {"name": "name", "type": "string"}
AGE = {"name": "age", "type": "int"}
AGE_DEFAULT = {"name": "age", "type": "int", "default": 0}


async def versions(s: MemoryTopicSchemas, topic: PulsarTopic = TOPIC) -> list[int]:
    return [h.version for h in await s.history(topic)]


async def test_versions_count_from_zero_and_an_equal_schema_gets_its_own_back() -> None:
    s = MemoryTopicSchemas()
    assert await s.history(TOPIC) == []
    assert await s.upload(TOPIC, "AVRO", avro(NAME)) == 0
    assert await s.upload(TOPIC, "AVRO", avro(NAME, AGE_DEFAULT)) == 1
    # other spacing, key order, docs and aliases: the same schema to Pulsar, any version
    respelled = '{ "fields": [ {"type": "string", "name": "name", "doc": "who"} ],\n'
    respelled += ' "namespace": "t", "aliases": ["Person"], "name": "User", "type": "record" }'
    assert await s.upload(TOPIC, "AVRO", respelled) == 0
    assert await versions(s) == [0, 1]
    first = (await s.history(TOPIC))[0]
    assert (first.type, first.data) == ("AVRO", avro(NAME))  # as uploaded first


async def test_what_java_avro_compares_makes_a_new_version() -> None:
    s = MemoryTopicSchemas(broker="ALWAYS_COMPATIBLE")
    base = avro(NAME, AGE_DEFAULT)
    assert await s.upload(TOPIC, "AVRO", base) == 0
    assert await s.upload(TOPIC, "AVRO", avro(NAME, {**AGE_DEFAULT, "default": 1})) == 1
    assert await s.upload(TOPIC, "AVRO", avro(AGE_DEFAULT, NAME)) == 2  # field order
    assert await s.upload(TOPIC, "AVRO", avro(NAME, AGE_DEFAULT, custom="x")) == 3
    assert await s.upload(TOPIC, "AVRO", avro(NAME, {**AGE_DEFAULT, "order": "ascending"})) == 0


async def test_the_broker_default_full_refuses_a_one_way_evolution() -> None:
    s = MemoryTopicSchemas()
    await s.upload(TOPIC, "AVRO", avro(NAME))
    with pytest.raises(SchemaRefused) as refused:
        await s.upload(TOPIC, "AVRO", avro(NAME, AGE))  # forward only
    assert refused.value.incompatible
    assert "FULL" in str(refused.value)
    assert await versions(s) == [0]


async def test_the_topic_policy_wins_over_the_namespace_and_the_broker() -> None:
    s = MemoryTopicSchemas()
    await s.set_namespace_strategy(NS, "FORWARD")
    await s.set_topic_strategy(TOPIC, "BACKWARD")
    await s.upload(TOPIC, "AVRO", avro(NAME, AGE))
    assert await s.upload(TOPIC, "AVRO", avro(NAME)) == 1  # backward only: allowed
    with pytest.raises(SchemaRefused) as refused:
        await s.upload(TOPIC, "AVRO", avro(NAME, {"name": "x", "type": "long"}))
    assert refused.value.incompatible
    await s.set_topic_strategy(TOPIC, None)  # the namespace's FORWARD applies
    assert await s.upload(TOPIC, "AVRO", avro(NAME, {"name": "x", "type": "long"})) == 2
    await s.set_namespace_strategy(NS, None)  # the broker's FULL applies
    assert await s.topic_strategy(TOPIC) is None
    assert await s.namespace_strategy(NS) is None
    assert await s.broker_strategy() == "FULL"
    with pytest.raises(SchemaRefused):
        await s.upload(TOPIC, "AVRO", avro(NAME, {"name": "x", "type": "long"}, AGE))


async def test_transitive_strategies_check_every_version_since_the_last_delete() -> None:
    s = MemoryTopicSchemas(broker="BACKWARD_TRANSITIVE")
    v0 = avro({"name": "a", "type": "int"})
    v1 = avro()
    v2 = avro({"name": "a", "type": "string", "default": ""})
    assert [await s.upload(TOPIC, "AVRO", v) for v in (v0, v1)] == [0, 1]
    with pytest.raises(SchemaRefused):
        await s.upload(TOPIC, "AVRO", v2)  # cannot read v0's int
    s.broker = "BACKWARD"
    assert await s.upload(TOPIC, "AVRO", v2) == 2  # the latest (v1) is all that counts
    s.broker = "BACKWARD_TRANSITIVE"
    await s.delete(TOPIC)
    assert await s.upload(TOPIC, "AVRO", v0) == 4  # a new history after the tombstone
    with pytest.raises(SchemaRefused):
        await s.upload(TOPIC, "AVRO", v2)


async def test_delete_is_a_tombstone_that_takes_a_version() -> None:
    s = MemoryTopicSchemas()
    await s.upload(TOPIC, "AVRO", avro(NAME))
    await s.upload(TOPIC, "AVRO", avro(NAME, AGE_DEFAULT))
    await s.delete(TOPIC)  # version 2
    assert await s.history(TOPIC) == []
    await s.delete(TOPIC)  # version 3: a tombstone even with nothing to delete
    # a schema FULL would refuse after v1: no history, no check, the numbers go on
    assert await s.upload(TOPIC, "AVRO", avro({"name": "z", "type": "long"}, name="Z")) == 4
    assert await versions(s) == [4]
    # an equal schema before the tombstone is no longer there to be found
    s.broker = "ALWAYS_COMPATIBLE"
    assert await s.upload(TOPIC, "AVRO", avro(NAME)) == 5


async def test_delete_of_a_topic_without_schema_takes_version_zero() -> None:
    s = MemoryTopicSchemas()
    await s.delete(TOPIC)
    assert await s.upload(TOPIC, "AVRO", avro(NAME)) == 1


async def test_always_incompatible_refuses_all_but_the_first_and_equal_schemas() -> None:
    s = MemoryTopicSchemas()
    await s.set_namespace_strategy(NS, "ALWAYS_INCOMPATIBLE")
    assert await s.upload(TOPIC, "AVRO", avro(NAME)) == 0
    assert await s.upload(TOPIC, "AVRO", avro(NAME)) == 0
    with pytest.raises(SchemaRefused) as refused:
        await s.upload(TOPIC, "AVRO", avro(NAME, AGE_DEFAULT))
    assert refused.value.incompatible


async def test_a_type_change_is_refused_unless_always_compatible() -> None:
    s = MemoryTopicSchemas()
    await s.upload(TOPIC, "AVRO", avro(NAME))
    with pytest.raises(SchemaRefused) as refused:
        await s.upload(TOPIC, "JSON", avro(NAME))  # the same text, another type
    assert refused.value.incompatible
    assert "exists schema type AVRO, new schema type JSON" in str(refused.value)
    await s.set_topic_strategy(TOPIC, "ALWAYS_COMPATIBLE")
    assert await s.upload(TOPIC, "JSON", avro(NAME)) == 1
    assert await s.upload(TOPIC, "STRING", "") == 2


@pytest.mark.parametrize(
    ("type_", "data"),
    [
        ("AVRO", "not json"),
        ("AVRO", '{"type":"record","name":"R","fields":[{"name":"a","type":"nosuch"}]}'),
        ("AVRO", '["null","string"]'),  # Pulsar takes no top-level union
        ("JSON", "{}"),
        ("STRING", "text"),  # a primitive type's data is empty
    ],
)
async def test_invalid_schemas_are_refused_as_invalid(type_: str, data: str) -> None:
    s = MemoryTopicSchemas()
    with pytest.raises(SchemaRefused) as refused:
        await s.upload(TOPIC, type_, data)
    assert not refused.value.incompatible
    assert await s.history(TOPIC) == []


async def test_an_unknown_type_is_pulsars_server_error() -> None:
    with pytest.raises(AdminError) as failed:
        await MemoryTopicSchemas().upload(TOPIC, "NOSUCH", "")
    assert failed.value.status == 500


async def test_unknown_strategy_names_are_refused_before_pulsar() -> None:
    s = MemoryTopicSchemas()
    with pytest.raises(ValueError, match="UNDEFINED"):
        await s.set_namespace_strategy(NS, "UNDEFINED")
    with pytest.raises(ValueError):
        await s.set_topic_strategy(TOPIC, "NONE")  # a Confluent name, not Pulsar's


async def test_a_topic_policy_needs_the_topic_when_existence_is_modelled() -> None:
    there = {"users"}
    s = MemoryTopicSchemas(exists=lambda t: t.local in there)
    other = PulsarTopic(NS, "orders", "orders")
    with pytest.raises(AdminError) as missing:
        await s.set_topic_strategy(other, "BACKWARD")
    assert missing.value.status == 404
    assert await s.topic_strategy(other) is None
    await s.set_topic_strategy(TOPIC, "BACKWARD")
    assert await s.topic_strategy(TOPIC) == "BACKWARD"
    # the schema itself needs no topic
    assert await s.upload(other, "AVRO", avro(NAME)) == 0


async def test_topics_keep_histories_of_their_own() -> None:
    s = MemoryTopicSchemas()
    other = PulsarTopic(Namespace("acme", "prod"), "users", "persistent://acme/prod/users")
    await s.upload(TOPIC, "AVRO", avro(NAME))
    assert await s.upload(other, "AVRO", avro({"name": "q", "type": "int"}, name="Q")) == 0
    assert await versions(s, other) == [0]


@pytest.mark.parametrize("cut", ["own flag", "the log's"])
async def test_down_makes_every_call_unavailable(cut: str) -> None:
    log = MemoryLog()
    s = MemoryTopicSchemas(log)
    await s.upload(TOPIC, "AVRO", avro(NAME))
    if cut == "own flag":
        s.down = True
    else:
        log.set_down(True)
    calls = [
        s.history(TOPIC),
        s.upload(TOPIC, "AVRO", avro(NAME)),
        s.delete(TOPIC),
        s.topic_strategy(TOPIC),
        s.set_topic_strategy(TOPIC, "FULL"),
        s.namespace_strategy(NS),
        s.set_namespace_strategy(NS, "FULL"),
        s.broker_strategy(),
    ]
    for call in calls:
        with pytest.raises(StorageUnavailable):
            await call
    s.down = False
    log.set_down(False)
    assert await versions(s) == [0]  # nothing changed while down
    assert await s.topic_strategy(TOPIC) is None
    assert s.uploads == 1  # the refused call never reached the registry
