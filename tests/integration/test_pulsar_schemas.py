"""kop/pulsar/schemas.py against the real Pulsar, and the in-memory twin
(tests/sim/memory_schemas.py) held to the same cases: every `side` test runs once on
each, with the same expectations, so a twin that drifts from Pulsar fails here.

Then what only Pulsar can show: a partitioned topic's one history, Pulsar's own
answers (the POST body, `/compatibility`), and a Pulsar producer with a typed Avro
schema meeting a schema uploaded through REST.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pulsar
import pytest
from google.protobuf.descriptor_pb2 import FieldDescriptorProto
from pulsar.schema import AvroSchema, Integer, Record, String

from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.schemas import PulsarTopicSchemas
from kop.registry.protobuf.descriptors import canonical_protobuf
from kop.registry.protobuf.native import native_data
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.schemas import SchemaRefused, TopicSchemas
from kop.storage.types import AdminError
from tests.integration.conftest import PULSAR_HTTP, PULSAR_URL, _drop_namespace
from tests.sim.memory_schemas import MemoryTopicSchemas
from tests.unit.test_registry_protobuf import proto, text

SETTLE_S = 30.0  # policies reach the broker's caches through its metadata and system topic


def avro(*fields: dict[str, Any], name: str = "User", **extra: Any) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "t", **extra, "fields": fields})


NAME = {"name": "name", "type": "string"}
AGE = {"name": "age", "type": "int"}
AGE_DEFAULT = {"name": "age", "type": "int", "default": 0}
EMAIL = {"name": "email", "type": "string"}


def _admin(method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{PULSAR_HTTP}/admin/v2/{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


@pytest.fixture(scope="module")
def namespace(pulsar: str) -> Iterator[Namespace]:
    ns = Namespace("public", f"kop-sr-{uuid.uuid4().hex[:10]}")
    _admin("PUT", f"namespaces/{ns.path}", {})
    yield ns
    _drop_namespace(ns.path)


@dataclass
class Side:
    """One implementation of the port, with a way to make a topic in it."""

    name: str
    schemas: TopicSchemas
    ns: Namespace
    create: Callable[[PulsarTopic], Awaitable[None]]

    def topic(self) -> PulsarTopic:
        """A name no test used (the topic itself is not made)."""
        local = f"sr-{uuid.uuid4().hex[:10]}"
        return PulsarTopic(self.ns, local, local)

    async def made_topic(self) -> PulsarTopic:
        topic = self.topic()
        await self.create(topic)
        return topic

    async def set_topic(self, topic: PulsarTopic, strategy: str | None) -> None:
        await self.schemas.set_topic_strategy(topic, strategy)
        await until(lambda: self.schemas.topic_strategy(topic), strategy)

    async def set_namespace(self, strategy: str | None) -> None:
        await self.schemas.set_namespace_strategy(self.ns, strategy)
        await until(lambda: self.schemas.namespace_strategy(self.ns), strategy)

    async def versions(self, topic: PulsarTopic) -> list[int]:
        return [h.version for h in await self.schemas.history(topic)]


async def until(read: Callable[[], Awaitable[Any]], wanted: Any) -> None:
    """Reads until it says `wanted`, within SETTLE_S."""
    deadline = time.monotonic() + SETTLE_S
    while (found := await read()) != wanted:
        assert time.monotonic() < deadline, f"still {found!r}, not {wanted!r}"
        await asyncio.sleep(0.1)


@pytest.fixture(params=["pulsar", "memory"])
async def side(request: pytest.FixtureRequest, namespace: Namespace) -> AsyncIterator[Side]:
    if request.param == "memory":
        made: set[str] = set()

        async def remember(topic: PulsarTopic) -> None:
            made.add(topic.full)

        twin = MemoryTopicSchemas(exists=lambda t: t.full in made)
        yield Side("memory", twin, namespace, remember)
        return
    admin = PulsarAdmin(PULSAR_HTTP)

    async def create(topic: PulsarTopic) -> None:
        await admin.create_partitioned(topic, 2, {})

    try:
        yield Side("pulsar", PulsarTopicSchemas(admin.request), namespace, create)
    finally:
        await admin.close()


async def test_versions_from_zero_and_an_equal_schema_keeps_its_version(side: Side) -> None:
    topic = side.topic()  # the topic need not exist
    assert await side.schemas.history(topic) == []
    assert await side.schemas.upload(topic, "AVRO", avro(NAME)) == 0
    respelled = '{ "fields": [ {"type": "string", "name": "name", "doc": "who"} ],\n'
    respelled += ' "namespace": "t", "aliases": ["Person"], "name": "User", "type": "record" }'
    assert await side.schemas.upload(topic, "AVRO", respelled) == 0
    # compatible both ways, so the broker's FULL takes it
    assert await side.schemas.upload(topic, "AVRO", avro(NAME, AGE_DEFAULT)) == 1
    explicit_order = avro(NAME, {**AGE_DEFAULT, "order": "ascending"})
    assert await side.schemas.upload(topic, "AVRO", explicit_order) == 1
    assert await side.schemas.upload(topic, "AVRO", avro(NAME)) == 0  # any version, not the latest
    # what Java's Avro compares: a custom property, a default's value
    assert await side.schemas.upload(topic, "AVRO", avro(NAME, AGE_DEFAULT, custom="x")) == 2
    assert await side.schemas.upload(topic, "AVRO", avro(NAME, {**AGE_DEFAULT, "default": 7})) == 3
    history = await side.schemas.history(topic)
    assert [(h.version, h.type, h.data) for h in history[:2]] == [
        (0, "AVRO", avro(NAME)),
        (1, "AVRO", avro(NAME, AGE_DEFAULT)),
    ]


async def test_json_is_an_avro_record_and_its_own_properties_tell_versions_apart(
    side: Side,
) -> None:
    """What kop's JSON Schema subjects rely on (kop.registry.json_avro): a JSON topic's
    schema is an Avro record, checked by Avro's rules, and the JSON Schema kept on it as
    a property makes another version of the same record."""
    topic = side.topic()
    assert await side.schemas.upload(topic, "JSON", avro(NAME, **{"kop.jsonSchema": "1"})) == 0
    assert await side.schemas.upload(topic, "JSON", avro(NAME, **{"kop.jsonSchema": "1"})) == 0
    assert await side.schemas.upload(topic, "JSON", avro(NAME, **{"kop.jsonSchema": "2"})) == 1
    assert await side.schemas.upload(topic, "JSON", avro(NAME)) == 2
    with pytest.raises(SchemaRefused) as refused:  # FULL: a new field without a default
        await side.schemas.upload(topic, "JSON", avro(NAME, {"name": "age", "type": "int"}))
    assert refused.value.incompatible
    assert [h.type for h in await side.schemas.history(topic)] == ["JSON"] * 3


async def test_the_broker_default_full_refuses_a_one_way_evolution(side: Side) -> None:
    topic = side.topic()
    await side.schemas.upload(topic, "AVRO", avro(NAME))
    for one_way in (avro(NAME, AGE), avro()):  # forward only; backward only
        with pytest.raises(SchemaRefused) as refused:
            await side.schemas.upload(topic, "AVRO", one_way)
        assert refused.value.incompatible
        assert "\n" not in str(refused.value)
    assert await side.versions(topic) == [0]
    assert await side.schemas.broker_strategy() == "FULL"


async def test_a_backward_topic_policy_decides_for_its_topic(side: Side) -> None:
    topic = await side.made_topic()
    assert await side.schemas.topic_strategy(topic) is None
    await side.set_topic(topic, "BACKWARD")
    await side.schemas.upload(topic, "AVRO", avro(NAME, AGE))
    # removing a field without default: backward only, which FULL would refuse
    assert await side.schemas.upload(topic, "AVRO", avro(NAME)) == 1
    with pytest.raises(SchemaRefused) as refused:
        await side.schemas.upload(topic, "AVRO", avro(NAME, EMAIL))  # forward only
    assert refused.value.incompatible
    assert "BACKWARD" in str(refused.value)
    await side.set_topic(topic, None)
    assert await side.versions(topic) == [0, 1]


async def test_transitive_strategies_check_the_whole_history(side: Side) -> None:
    topic = await side.made_topic()
    await side.set_topic(topic, "BACKWARD_TRANSITIVE")
    v0 = avro({"name": "a", "type": "int"})
    v1 = avro()  # `a` removed
    v2 = avro({"name": "a", "type": "string", "default": ""})  # reads v1's data, not v0's
    assert [await side.schemas.upload(topic, "AVRO", v) for v in (v0, v1)] == [0, 1]
    with pytest.raises(SchemaRefused) as refused:
        await side.schemas.upload(topic, "AVRO", v2)
    assert refused.value.incompatible
    await side.set_topic(topic, "BACKWARD")
    assert await side.schemas.upload(topic, "AVRO", v2) == 2


async def test_always_incompatible_refuses_all_but_the_first_and_equal(side: Side) -> None:
    topic = await side.made_topic()
    await side.set_topic(topic, "ALWAYS_INCOMPATIBLE")
    assert await side.schemas.upload(topic, "AVRO", avro(NAME)) == 0
    assert await side.schemas.upload(topic, "AVRO", avro(NAME)) == 0
    with pytest.raises(SchemaRefused) as refused:
        await side.schemas.upload(topic, "AVRO", avro(NAME, AGE_DEFAULT))
    assert refused.value.incompatible


async def test_another_type_is_refused_unless_always_compatible(side: Side) -> None:
    topic = await side.made_topic()
    await side.schemas.upload(topic, "AVRO", avro(NAME))
    with pytest.raises(SchemaRefused) as refused:
        await side.schemas.upload(topic, "JSON", avro(NAME))
    assert refused.value.incompatible
    assert "exists schema type AVRO, new schema type JSON" in str(refused.value)
    await side.set_topic(topic, "ALWAYS_COMPATIBLE")
    assert await side.schemas.upload(topic, "JSON", avro(NAME)) == 1
    assert await side.schemas.upload(topic, "AVRO", avro(name="Other")) == 2


@pytest.mark.parametrize(
    ("type_", "data"),
    [
        ("AVRO", "not json"),
        ("AVRO", '{"type":"record","name":"R","fields":[{"name":"a","type":"nosuch"}]}'),
        ("AVRO", '{"type":"record","name":"R-1","fields":[]}'),
        ("AVRO", '["null","string"]'),
        ("JSON", "{}"),
        ("STRING", "text"),
    ],
)
async def test_invalid_schemas_are_refused_as_invalid(side: Side, type_: str, data: str) -> None:
    topic = side.topic()
    with pytest.raises(SchemaRefused) as refused:
        await side.schemas.upload(topic, type_, data)
    assert not refused.value.incompatible
    assert await side.schemas.history(topic) == []


async def test_an_unknown_type_name_is_a_server_error(side: Side) -> None:
    with pytest.raises(AdminError) as failed:
        await side.schemas.upload(side.topic(), "NOSUCH", "")
    assert failed.value.status == 500


async def test_delete_leaves_a_tombstone_and_the_numbers_go_on(side: Side) -> None:
    topic = side.topic()
    await side.schemas.upload(topic, "AVRO", avro(NAME))
    await side.schemas.upload(topic, "AVRO", avro(NAME, AGE_DEFAULT))
    await side.schemas.delete(topic)  # the tombstone is version 2
    assert await side.schemas.history(topic) == []
    await side.schemas.delete(topic)  # 3: another, with nothing to delete
    # no history, no check: a schema FULL would refuse after version 1
    assert await side.schemas.upload(topic, "AVRO", avro(AGE, name="Other")) == 4
    assert await side.versions(topic) == [4]
    fresh = side.topic()
    await side.schemas.delete(fresh)  # a topic that never had a schema: tombstone 0
    assert await side.schemas.upload(fresh, "AVRO", avro(NAME)) == 1


async def test_the_namespace_strategy_applies_until_unset(side: Side) -> None:
    topic = side.topic()
    await side.schemas.upload(topic, "AVRO", avro(NAME))
    try:
        await side.set_namespace("FORWARD")
        assert await side.schemas.upload(topic, "AVRO", avro(NAME, AGE)) == 1
    finally:
        await side.set_namespace(None)
    # back to the broker's FULL
    with pytest.raises(SchemaRefused):
        await side.schemas.upload(topic, "AVRO", avro(NAME, AGE, EMAIL))
    assert await side.versions(topic) == [0, 1]


async def test_a_topic_policy_needs_the_topic(side: Side) -> None:
    topic = side.topic()
    assert await side.schemas.topic_strategy(topic) is None
    with pytest.raises(AdminError) as missing:
        await side.schemas.set_topic_strategy(topic, "BACKWARD")
    assert missing.value.status == 404


async def test_unknown_strategy_names_never_reach_pulsar(side: Side) -> None:
    topic = await side.made_topic()
    with pytest.raises(ValueError):
        await side.schemas.set_topic_strategy(topic, "NONE")  # Confluent's name
    with pytest.raises(ValueError):
        await side.schemas.set_namespace_strategy(side.ns, "UNDEFINED")
    assert await side.schemas.topic_strategy(topic) is None


# What only Pulsar shows.


@pytest.fixture
async def admin(pulsar: str) -> AsyncIterator[PulsarAdmin]:
    admin = PulsarAdmin(PULSAR_HTTP)
    try:
        yield admin
    finally:
        await admin.close()


async def test_a_partitioned_topic_has_one_history(
    admin: PulsarAdmin, namespace: Namespace
) -> None:
    schemas = PulsarTopicSchemas(admin.request)
    topic = PulsarTopic(namespace, f"sr-{uuid.uuid4().hex[:10]}", "t")
    await admin.create_partitioned(topic, 3, {})
    await schemas.upload(topic, "AVRO", avro(NAME))
    whole = await schemas.history(topic)
    for p in range(3):
        partition = PulsarTopic(namespace, f"{topic.local}-partition-{p}", "t")
        assert await schemas.history(partition) == whole
    with pytest.raises(AdminError) as refused:  # no topic policy on a partition
        await schemas.set_topic_strategy(partition, "FULL")
    assert refused.value.status == 412


async def test_pulsars_own_answers(admin: PulsarAdmin, namespace: Namespace) -> None:
    """Pinned, since kop reads them: the POST body is a LongSchemaVersion bean, and
    `/compatibility` cannot tell an incompatible schema from a failure (500)."""
    path = f"schemas/{namespace.path}/sr-{uuid.uuid4().hex[:10]}"
    payload = {"type": "AVRO", "schema": avro(NAME), "properties": {}}
    assert await admin.request("POST", f"{path}/schema", payload) == {"version": {"version": 0}}
    assert await admin.request("POST", f"{path}/compatibility", payload) == {
        "schemaCompatibilityStrategy": "FULL",
        "compatibility": True,
    }
    with pytest.raises(AdminError) as failed:
        await admin.request("POST", f"{path}/compatibility", {**payload, "schema": avro(NAME, AGE)})
    assert failed.value.status == 500
    assert await admin.request("DELETE", f"{path}/schema") == {"version": 1}


class User(Record):  # type: ignore[misc]  # pulsar-client is untyped
    _avro_namespace = "t"
    name = String(required=True)
    age = Integer()


class UserWithEmail(Record):  # type: ignore[misc]
    """User plus a field without default: FULL refuses it (old data lacks it)."""

    _avro_namespace = "t"
    _avro_name = "User"
    name = String(required=True)
    age = Integer()
    email = String(required=True)


async def test_a_typed_pulsar_producer_meets_the_schema_uploaded_through_rest(
    admin: PulsarAdmin, namespace: Namespace
) -> None:
    schemas = PulsarTopicSchemas(admin.request)
    topic = PulsarTopic(namespace, f"sr-{uuid.uuid4().hex[:10]}", "t")
    await admin.create_partitioned(topic, 2, {})
    # the registry uploads compact JSON; pulsar-client sends it pretty-printed
    assert await schemas.upload(topic, "AVRO", json.dumps(User.schema())) == 0
    client = pulsar.Client(PULSAR_URL)
    try:
        producer = client.create_producer(topic.full, schema=AvroSchema(User))
        consumer = client.subscribe(
            topic.full,
            "sr-it",
            schema=AvroSchema(User),
            initial_position=pulsar.InitialPosition.Earliest,
        )
        producer.send(User(name="ada", age=36))
        got = consumer.receive(10_000).value()
        assert (got.name, got.age) == ("ada", 36)
        assert [h.version for h in await schemas.history(topic)] == [0]  # no new version
        with pytest.raises(pulsar.exceptions.IncompatibleSchema):
            client.create_producer(topic.full, schema=AvroSchema(UserWithEmail))
        assert [h.version for h in await schemas.history(topic)] == [0]
    finally:
        client.close()


def _native(root: str = "Order", note_type: int = FieldDescriptorProto.TYPE_STRING) -> str:
    """PROTOBUF_NATIVE data as kop uploads it: `root` first in its file."""
    fields = [("id", 1, FieldDescriptorProto.TYPE_INT64), ("note", 2, note_type)]
    file = proto({"name": root, "fields": fields}, {"name": "Other"})
    return native_data(canonical_protobuf(text(file)))


async def test_protobuf_native_keeps_its_root_message_and_checks_nothing_else(
    side: Side,
) -> None:
    topic = await side.made_topic()
    assert await side.schemas.upload(topic, "PROTOBUF_NATIVE", _native()) == 0
    assert await side.schemas.upload(topic, "PROTOBUF_NATIVE", _native()) == 0
    # a field's type changed: Pulsar's checker looks at the root's name alone
    changed = _native(note_type=FieldDescriptorProto.TYPE_INT32)
    assert await side.schemas.upload(topic, "PROTOBUF_NATIVE", changed) == 1
    with pytest.raises(SchemaRefused) as refused:
        await side.schemas.upload(topic, "PROTOBUF_NATIVE", _native(root="Refund"))
    assert refused.value.incompatible
    assert "root message change is not allowed under the 'FULL' strategy" in str(refused.value)
    await side.set_topic(topic, "ALWAYS_INCOMPATIBLE")
    assert await side.schemas.upload(topic, "PROTOBUF_NATIVE", changed) == 1
    assert await side.schemas.upload(topic, "PROTOBUF_NATIVE", _native()) == 0  # equal: kept
    with pytest.raises(SchemaRefused) as refused:
        await side.schemas.upload(
            topic, "PROTOBUF_NATIVE", _native(note_type=FieldDescriptorProto.TYPE_BYTES)
        )
    assert "Unknown SchemaCompatibilityStrategy" in str(refused.value)


@pytest.mark.parametrize(
    "data",
    [
        "not json",
        _native().replace('Name":"shop.Order"', 'Name":"shop.Nope"'),  # no such root
        _native().replace('Name":"default.proto"', 'Name":"x.proto"'),  # no such file
        _native().replace('","rootMessage', 'x","rootMessage'),  # base64 of a wrong length
    ],
)
async def test_protobuf_native_data_pulsar_cannot_read_is_invalid(side: Side, data: str) -> None:
    topic = side.topic()
    with pytest.raises(SchemaRefused) as refused:
        await side.schemas.upload(topic, "PROTOBUF_NATIVE", data)
    assert not refused.value.incompatible
