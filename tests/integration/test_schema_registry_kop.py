"""The Schema Registry of a kop process over real Pulsar: confluent-kafka's client
registers a `<topic>-value` schema through kop, Pulsar's admin API and a typed Pulsar
producer see it as the topic's schema, an evolution registered through kop is Pulsar's
next version, and ids survive kop's restart (they are in Pulsar)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulsar
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor_pb2 import FieldDescriptorProto, FileDescriptorProto
from pulsar.schema import AvroSchema, JsonSchema, Long, ProtobufNativeSchema, Record, String

from bench.java_side import pulsar_lib
from tests.integration.clients import cf_consume
from tests.integration.conftest import PULSAR_HTTP, PULSAR_URL, KopProcess, free_port


class Reading(Record):  # type: ignore[misc]  # pulsar-client is untyped
    _avro_namespace = "kop.it"
    sensor = String(required=True)


class Ticket(Record):  # type: ignore[misc]
    code = String(required=True)
    count = Long(required=True)
    note = String()


# The JSON Schema a Kafka application registers for Ticket's documents
TICKET_JSON = {
    "title": "Ticket",
    "type": "object",
    "properties": {
        "code": {"type": "string"},
        "count": {"type": "integer"},
        "note": {"type": ["string", "null"]},
    },
    "required": ["code", "count"],
}


def pulsar_schemas(topic: str) -> list[dict[str, Any]]:
    url = f"{PULSAR_HTTP}/admin/v2/schemas/public/default/{topic}/schemas"
    with urllib.request.urlopen(url, timeout=10) as answer:
        found: list[dict[str, Any]] = json.load(answer)["getSchemaResponses"]
    return found


@pytest.mark.usefixtures("pulsar")
def test_a_subject_registered_through_kop_is_the_topics_schema_in_pulsar(tmp_path: Path) -> None:
    port = free_port()
    kop = KopProcess(tmp_path, KOP_SCHEMA_REGISTRY_PORT=str(port))
    topic = f"sr-{uuid.uuid4().hex[:10]}"
    client = pulsar.Client(PULSAR_URL)
    try:
        kop.start()
        registry = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})
        schema = Schema(json.dumps(Reading.schema()), "AVRO")
        schema_id = registry.register_schema(f"{topic}-value", schema)
        stored = pulsar_schemas(topic)
        assert [(s["version"], s["type"]) for s in stored] == [(0, "AVRO")]
        assert json.loads(stored[0]["data"]) == Reading.schema()
        # a typed Pulsar producer meets that schema as it is (no new version)
        client.create_producer(f"persistent://public/default/{topic}", schema=AvroSchema(Reading))
        assert len(pulsar_schemas(topic)) == 1
        evolved = {**Reading.schema()}
        evolved["fields"] = [*evolved["fields"], {"name": "value", "type": "int", "default": 0}]
        registry.register_schema(f"{topic}-value", Schema(json.dumps(evolved), "AVRO"))
        assert [s["version"] for s in pulsar_schemas(topic)] == [0, 1]
        assert registry.get_versions(f"{topic}-value") == [1, 2]
        newer = registry.get_latest_version(f"{topic}-value")
        assert newer.schema_id != schema_id
        assert json.loads(newer.schema.schema_str)["fields"][1]["name"] == "value"
        kop.stop()
        kop.start()
        again = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})
        assert json.loads(again.get_schema(schema_id).schema_str) == Reading.schema()
        assert again.get_latest_version(f"{topic}-value").schema_id == newer.schema_id
    finally:
        client.close()
        kop.stop()


@dataclass
class TopicSide:
    """A kop with its registry over real Pulsar, a fresh one-partition topic and a
    Pulsar client: what the both-sides tests share."""

    kop: KopProcess
    registry: SchemaRegistryClient
    client: pulsar.Client
    topic: str
    ctx: SerializationContext

    @property
    def full(self) -> str:
        return f"persistent://public/default/{self.topic}"

    def produce(self, values: list[bytes]) -> None:
        producer = Producer({"bootstrap.servers": self.kop.bootstrap})
        for value in values:
            producer.produce(self.topic, value)
        assert producer.flush(30) == 0

    def consume(self, n: int) -> list[bytes | None]:
        return [r.value for r in cf_consume(self.kop.bootstrap, self.topic, n, reset="earliest")]

    def typed_consumer(self, schema: Any) -> pulsar.Consumer:
        """A Pulsar consumer of the topic with `schema`, from its first message."""
        return self.client.subscribe(
            self.full, "typed", schema=schema, initial_position=pulsar.InitialPosition.Earliest
        )


@contextlib.contextmanager
def topic_side(tmp_path: Path, prefix: str) -> Iterator[TopicSide]:
    port = free_port()
    kop = KopProcess(tmp_path, KOP_SCHEMA_REGISTRY_PORT=str(port))
    topic = f"{prefix}-{uuid.uuid4().hex[:10]}"
    client = pulsar.Client(PULSAR_URL)
    try:
        kop.start()
        registry = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})
        admin = AdminClient({"bootstrap.servers": kop.bootstrap})
        admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
        ctx = SerializationContext(topic, MessageField.VALUE)
        yield TopicSide(kop, registry, client, topic, ctx)
    finally:
        client.close()
        kop.stop()


@pytest.mark.usefixtures("pulsar")
def test_records_are_read_as_typed_values_from_both_sides(tmp_path: Path) -> None:
    """A Kafka producer's Avro records (a registry serializer) are typed values to a Pulsar
    consumer with `AvroSchema`; a typed Pulsar producer's values are records a Kafka
    consumer's registry deserializer reads."""
    with topic_side(tmp_path, "sr") as side:
        serialize = AvroSerializer(side.registry, json.dumps(Reading.schema()))
        pulsar_consumer = side.typed_consumer(AvroSchema(Reading))
        side.produce([serialize({"sensor": sensor}, side.ctx) for sensor in ("s1", "s2")])
        got = [pulsar_consumer.receive(30_000).value().sensor for _ in range(2)]
        assert got == ["s1", "s2"]
        typed = side.client.create_producer(side.full, schema=AvroSchema(Reading))
        typed.send(Reading(sensor="s3"))
        deserialize = AvroDeserializer(side.registry)
        values = [deserialize(v, side.ctx)["sensor"] for v in side.consume(3)]
        assert values == ["s1", "s2", "s3"]


@pytest.mark.usefixtures("pulsar")
def test_json_records_are_read_as_typed_values_from_both_sides(tmp_path: Path) -> None:
    """A Kafka producer's JSON Schema records are typed values to a Pulsar consumer with
    `JsonSchema`, which subscribes to the topic's schema kop made; a Pulsar JSON
    producer's values are records the Kafka JSON deserializer reads and validates."""
    with topic_side(tmp_path, "sr-json") as side:
        value_subject = f"{side.topic}-value"
        side.registry.register_schema(value_subject, Schema(json.dumps(TICKET_JSON), "JSON"))
        (stored,) = pulsar_schemas(side.topic)
        assert stored["type"] == "JSON"
        pulsar_consumer = side.typed_consumer(JsonSchema(Ticket))
        serialize = JSONSerializer(json.dumps(TICKET_JSON), side.registry)
        side.produce([serialize({"code": c, "count": 1}, side.ctx) for c in ("a1", "a2")])
        got = [pulsar_consumer.receive(30_000).value() for _ in range(2)]
        assert [(t.code, t.count, t.note) for t in got] == [("a1", 1, None), ("a2", 1, None)]
        typed = side.client.create_producer(side.full, schema=JsonSchema(Ticket))
        typed.send(Ticket(code="p3", count=3, note="from pulsar"))
        deserialize = JSONDeserializer(None, schema_registry_client=side.registry)
        assert [deserialize(v, side.ctx) for v in side.consume(3)] == [
            {"code": "a1", "count": 1}, {"code": "a2", "count": 1},
            {"code": "p3", "count": 3, "note": "from pulsar"},
        ]  # fmt: skip


def _order_class() -> Any:
    """A message class as generated code gives it: shop.Order {int64 id = 1; string note = 2;}."""
    file = FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3")
    order = file.message_type.add(name="Order")
    label = FieldDescriptorProto.LABEL_OPTIONAL
    order.field.add(name="id", number=1, type=FieldDescriptorProto.TYPE_INT64, label=label)
    order.field.add(name="note", number=2, type=FieldDescriptorProto.TYPE_STRING, label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


@pytest.mark.usefixtures("pulsar")
def test_protobuf_records_are_read_as_typed_values_from_both_sides(tmp_path: Path) -> None:
    """A Kafka producer's Protobuf records (TopicNameStrategy) are typed values to a
    Pulsar consumer with `ProtobufNativeSchema`: the topic's schema is PROTOBUF_NATIVE
    with the message as root; a Pulsar producer's are records the Kafka Protobuf
    deserializer reads."""
    order = _order_class()
    with topic_side(tmp_path, "sr-proto") as side:
        serialize = ProtobufSerializer(order, side.registry, {})
        side.produce([serialize(order(id=i, note=f"k{i}"), side.ctx) for i in (1, 2)])
        (stored,) = pulsar_schemas(side.topic)
        assert stored["type"] == "PROTOBUF_NATIVE"
        assert json.loads(stored["data"])["rootMessageTypeName"] == "shop.Order"
        pulsar_consumer = side.typed_consumer(ProtobufNativeSchema(order))
        got = [pulsar_consumer.receive(30_000).value() for _ in range(2)]
        assert [(o.id, o.note) for o in got] == [(1, "k1"), (2, "k2")]
        typed = side.client.create_producer(side.full, schema=ProtobufNativeSchema(order))
        typed.send(order(id=3, note="from pulsar"))
        deserialize = ProtobufDeserializer(order, {})
        read = [deserialize(v, side.ctx) for v in side.consume(3)]
        assert [(o.id, o.note) for o in read] == [(1, "k1"), (2, "k2"), (3, "from pulsar")]


class Price(Record):  # type: ignore[misc]
    _avro_namespace = "kop.it"
    cents = Long(required=True)


class Purchase(Record):  # type: ignore[misc]
    _avro_namespace = "kop.it"
    item = String(required=True)
    price = Price(required=True)


def _purchase_class() -> Any:
    """shop.Purchase {string item = 1; common.Price price = 2;}, Price in a file of its own."""
    label = FieldDescriptorProto.LABEL_OPTIONAL
    price = FileDescriptorProto(name="common/price.proto", package="common", syntax="proto3")
    price.message_type.add(name="Price").field.add(
        name="cents", number=1, type=FieldDescriptorProto.TYPE_INT64, label=label
    )
    file = FileDescriptorProto(name="shop/purchase.proto", package="shop", syntax="proto3")
    file.dependency.append("common/price.proto")
    purchase = file.message_type.add(name="Purchase")
    purchase.field.add(name="item", number=1, type=FieldDescriptorProto.TYPE_STRING, label=label)
    purchase.field.add(
        name="price", number=2, type=FieldDescriptorProto.TYPE_MESSAGE, label=label,
        type_name=".common.Price",
    )  # fmt: skip
    pool = descriptor_pool.DescriptorPool()
    pool.Add(price)
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Purchase"))


@pytest.mark.usefixtures("pulsar")
def test_schemas_with_references_are_the_topics_whole_schema(tmp_path: Path) -> None:
    """A Protobuf file importing another (the serializer registers both, the topic's
    subject with a reference) is Pulsar's PROTOBUF_NATIVE version holding both files, and a
    Pulsar consumer reads the Kafka producer's records as typed values. An Avro record of
    a record another subject defines is Pulsar's schema with that record written out:
    typed values both ways."""
    purchase = _purchase_class()
    with topic_side(tmp_path, "sr-refs-pb") as side:
        serialize = ProtobufSerializer(purchase, side.registry, {})
        sent = purchase(item="tea")
        sent.price.cents = 250
        side.produce([serialize(sent, side.ctx)])
        latest = side.registry.get_latest_version(f"{side.topic}-value")
        assert [r.name for r in latest.schema.references] == ["common/price.proto"]
        pulsar_consumer = side.typed_consumer(ProtobufNativeSchema(purchase))
        got = pulsar_consumer.receive(30_000).value()
        assert (got.item, got.price.cents) == ("tea", 250)
    with topic_side(tmp_path, "sr-refs-avro") as side:
        price = json.dumps(Price.schema())
        side.registry.register_schema("kop.it.Price", Schema(price, "AVRO"))
        ref = SchemaReference("kop.it.Price", "kop.it.Price", 1)
        whole = Purchase.schema()
        named = {**whole, "fields": [whole["fields"][0], {"name": "price", "type": "kop.it.Price"}]}
        schema = Schema(json.dumps(named), "AVRO", [ref])
        side.registry.register_schema(f"{side.topic}-value", schema)
        conf = {"auto.register.schemas": False, "use.latest.version": True}
        serialize = AvroSerializer(side.registry, schema, conf=conf)
        side.produce([serialize({"item": "tea", "price": {"cents": 250}}, side.ctx)])
        pulsar_consumer = side.typed_consumer(AvroSchema(Purchase))
        got = pulsar_consumer.receive(30_000).value()
        assert (got.item, got.price.cents) == ("tea", 250)
        typed = side.client.create_producer(side.full, schema=AvroSchema(Purchase))
        typed.send(Purchase(item="milk", price=Price(cents=99)))
        deserialize = AvroDeserializer(side.registry)
        assert [deserialize(v, side.ctx) for v in side.consume(2)] == [
            {"item": "tea", "price": {"cents": 250}},
            {"item": "milk", "price": {"cents": 99}},
        ]
        assert len(pulsar_schemas(side.topic)) == 1  # the typed producer's is kop's version


JAVA_PULSAR = Path(__file__).resolve().parent / "java_pulsar" / "PulsarTyped.java"


def _java_pulsar(side: TopicSide, n: int, send: str | None) -> list[str]:
    """Pulsar's Java client on the topic (java_pulsar/PulsarTyped.java): the lines it
    prints (its client's log lines, on the same stream, left out)."""
    lib = pulsar_lib()
    assert lib is not None, "the Pulsar jars (tools/pulsar.py fetch) are missing"
    out = subprocess.run(
        ["java", "-cp", f"{lib}/*", str(JAVA_PULSAR), PULSAR_URL, side.full, str(n),
         *([send] if send else [])],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return [
        line for line in out.stdout.splitlines() if line.startswith(("RECORD", "SCHEMA", "SENT"))
    ]


@pytest.mark.usefixtures("pulsar")
def test_pulsars_java_client_reads_and_writes_typed_values_on_registry_topics(
    tmp_path: Path,
) -> None:
    """Pulsar's Java client with the topic's schema (AUTO_CONSUME, a generic record of the
    version it read): Avro and JSON Schema both ways, Protobuf as PROTOBUF_NATIVE read."""
    with topic_side(tmp_path, "sr-java-pulsar-avro") as side:
        serialize = AvroSerializer(side.registry, json.dumps(Reading.schema()))
        side.produce([serialize({"sensor": s}, side.ctx) for s in ("s1", "s2")])
        lines = _java_pulsar(side, 2, "sensor=from-java")
        assert lines == ["RECORD s1", "RECORD s2", "SCHEMA AVRO", "SENT"]
        deserialize = AvroDeserializer(side.registry)
        assert [deserialize(v, side.ctx)["sensor"] for v in side.consume(3)] == [
            "s1", "s2", "from-java",
        ]  # fmt: skip
    with topic_side(tmp_path, "sr-java-pulsar-json") as side:
        side.registry.register_schema(
            f"{side.topic}-value", Schema(json.dumps(TICKET_JSON), "JSON")
        )
        to_json = JSONSerializer(json.dumps(TICKET_JSON), side.registry)
        side.produce([to_json({"code": "a1", "count": 1}, side.ctx)])
        lines = _java_pulsar(side, 1, "code=j2,count=2")
        assert lines[1:] == ["SCHEMA JSON", "SENT"] and lines[0].startswith("RECORD a1|1")
        from_json = JSONDeserializer(json.dumps(TICKET_JSON))
        read = [from_json(v, side.ctx) for v in side.consume(2)]
        assert [(t["code"], t["count"]) for t in read] == [("a1", 1), ("j2", 2)]
    with topic_side(tmp_path, "sr-java-pulsar-proto") as side:
        order = _order_class()
        to_proto = ProtobufSerializer(order, side.registry, {})
        side.produce([to_proto(order(id=i, note=f"k{i}"), side.ctx) for i in (1, 2)])
        lines = _java_pulsar(side, 2, None)
        assert lines == ["RECORD 1|k1", "RECORD 2|k2", "SCHEMA PROTOBUF_NATIVE"]
