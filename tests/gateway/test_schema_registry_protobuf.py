"""Protobuf subjects, driven by confluent-kafka's ProtobufSerializer and
ProtobufDeserializer over the in-memory storage: `<topic>-value` is the Pulsar topic's
PROTOBUF_NATIVE schema (its first message the root), records are stored bare for
Pulsar's Protobuf consumers and read back framed, a subject of another strategy is
kop's, and evolutions are checked with Confluent's Protobuf rules."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

from confluent_kafka.schema_registry import (
    Schema,
    SchemaRegistryClient,
    record_subject_name_strategy,
)
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor_pb2 import FieldDescriptorProto, FileDescriptorProto

from kop.entries import framing
from kop.storage import batch_layout
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.types import OutgoingEntry, OutgoingMessage
from tests.gateway.registry_harness import consume, produce, refused, registry, run

T = FieldDescriptorProto
ORDERS = PulsarTopic(Namespace("public", "default"), "orders", "orders")


def order_file(note_type: int = T.TYPE_STRING) -> FileDescriptorProto:
    file = FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3")
    order = file.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=T.TYPE_INT64, label=T.LABEL_OPTIONAL)
    order.field.add(name="note", number=2, type=note_type, label=T.LABEL_OPTIONAL)
    return file


def order_class(file: FileDescriptorProto) -> Any:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def protobuf(file: FileDescriptorProto) -> Schema:
    return Schema(base64.standard_b64encode(file.SerializeToString()).decode(), "PROTOBUF")


RECORD_NAMES = {"subject.name.strategy": record_subject_name_strategy}


async def test_a_protobuf_serializers_records_are_read_back_by_its_deserializer() -> None:
    async with registry() as (client, _, gateway):
        order = order_class(order_file())
        serialize = ProtobufSerializer(order, client, RECORD_NAMES)
        deserialize = ProtobufDeserializer(order, RECORD_NAMES)
        ctx = SerializationContext("orders", MessageField.VALUE)
        values = [await run(serialize, order(id=i, note=f"n{i}"), ctx) for i in (1, 2)]
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        await run(produce, bootstrap, "orders", values)
        read = [deserialize(v, ctx) for v in await run(consume, bootstrap, "orders", 2)]
        assert [(o.id, o.note) for o in read] == [(1, "n1"), (2, "n2")]
        registered = await run(client.get_latest_version, "shop.Order")
        assert registered.schema.schema_type == "PROTOBUF"
        assert registered.version == 1


async def test_an_incompatible_evolution_is_refused_and_a_compatible_one_taken() -> None:
    async with registry() as (client, _, _g):
        await run(client.set_compatibility, "shop.Order", "BACKWARD")
        first = await run(client.register_schema, "shop.Order", protobuf(order_file()))
        as_bytes = protobuf(order_file(T.TYPE_BYTES))  # string and bytes: one wire group
        assert await run(client.register_schema, "shop.Order", as_bytes) != first
        number = protobuf(order_file(T.TYPE_INT64))
        assert await run(refused, lambda: client.register_schema("shop.Order", number)) == (
            409,
            409,
        )
        verdict = await run(client.test_compatibility, "shop.Order", number)
        assert verdict is False


ORDER_TEXT = """syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string note = 2;
}
"""


async def test_proto_text_is_a_schema_shown_as_text_or_serialized() -> None:
    """What Java's serializers send: `.proto` text, compiled by protoc. Confluent's answer
    is text unless `format=serialized`; confluent-kafka's serializer, told to use the
    latest version, frames records with the text schema's id."""
    async with registry() as (client, _, gateway):
        schema_id = await run(client.register_schema, "shop.Order", Schema(ORDER_TEXT, "PROTOBUF"))
        shown = await run(client.get_latest_version, "shop.Order")
        assert "message Order {" in shown.schema.schema_str
        assert "int64 id = 1;" in shown.schema.schema_str
        again = await run(client.register_schema, "shop.Order", shown.schema)
        assert again == schema_id  # the text kop shows is the schema it holds
        # a client of its own: the first caches the latest version whatever its format
        fresh = SchemaRegistryClient(
            {"url": f"http://127.0.0.1:{gateway.config.schema_registry_port}"}
        )
        serialized = await run(fresh.get_latest_version, "shop.Order", "serialized")
        file = FileDescriptorProto.FromString(base64.b64decode(serialized.schema.schema_str))
        assert [f.name for f in file.message_type[0].field] == ["id", "note"]
        assert await run(fresh.register_schema, "shop.Order", serialized.schema) == schema_id
        order = order_class(file)
        conf = {**RECORD_NAMES, "auto.register.schemas": False, "use.latest.version": True}
        serialize = ProtobufSerializer(order, fresh, conf)
        ctx = SerializationContext("orders", MessageField.VALUE)
        value = await run(serialize, order(id=7, note="text"), ctx)
        assert int.from_bytes(value[1:5], "big") == schema_id
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        await run(produce, bootstrap, "orders", [value])
        (read,) = await run(consume, bootstrap, "orders", 1)
        got = ProtobufDeserializer(order, RECORD_NAMES)(read, ctx)
        assert (got.id, got.note) == (7, "text")


async def test_proto_text_protoc_refuses_is_42201() -> None:
    async with registry() as (client, _, _g):
        text = Schema('syntax = "proto3"; message Order { int64 id = 1 }', "PROTOBUF")
        assert await run(refused, lambda: client.register_schema("shop.Order", text)) == (
            422,
            42201,
        )


async def test_a_topics_protobuf_records_are_stored_bare_and_read_back_framed() -> None:
    """The serializer's records (magic, id, message index 0, payload) are Pulsar
    messages of the topic's PROTOBUF_NATIVE version, the bare payload; a record naming
    another message of the file keeps its framing; a Pulsar producer's messages of that
    version are read framed by the Kafka deserializer."""
    async with registry() as (client, backend, gateway):
        await backend.admin.create_partitioned(ORDERS, 1, {})
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        order = order_class(order_file())
        serialize = ProtobufSerializer(order, client, {})
        ctx = SerializationContext("orders", MessageField.VALUE)
        framed = [await run(serialize, order(id=i, note=f"n{i}"), ctx) for i in (1, 2)]
        assert framed[0][5:6] == b"\x00"  # the first message's indexes
        other = framed[0][:5] + b"\x02\x02" + framed[0][6:]  # indexes [1]: another message
        await run(produce, bootstrap, "orders", [*framed, other])
        (v0,) = await backend.schemas.history(ORDERS)
        assert v0.type == "PROTOBUF_NATIVE"
        assert json.loads(v0.data)["rootMessageTypeName"] == "shop.Order"
        stored = [e for e in backend.log.topic(ORDERS.partition(0)).entries() if e.count]
        pulsar_view = [
            (e.schema_version, m.payload) for e in stored for m in batch_layout.messages(e)
        ]
        assert pulsar_view == [
            (framing.version_bytes(0), order(id=1, note="n1").SerializeToString()),
            (framing.version_bytes(0), order(id=2, note="n2").SerializeToString()),
            (None, other),
        ]
        assert await run(consume, bootstrap, "orders", 3) == [*framed, other]
        # a Pulsar producer's message of that version
        message = OutgoingMessage(order(id=3, note="pulsar").SerializeToString(), {}, None, None)
        typed = dataclasses.replace(
            OutgoingEntry.of(message), schema_version=framing.version_bytes(0)
        )
        backend.log.topic(ORDERS.partition(0)).append([typed], "pulsar-app", 0)
        values = await run(consume, bootstrap, "orders", 4)
        deserialize = ProtobufDeserializer(order, {})
        read = await run(deserialize, values[3], ctx)
        assert (read.id, read.note) == (3, "pulsar")


async def test_a_topics_protobuf_evolution_is_checked_by_kop_then_pulsar() -> None:
    """Pulsar checks only that the root keeps its name; kop checks the fields first, and
    a new first message is Pulsar's refusal, both 409."""
    async with registry() as (client, backend, _g):
        await run(client.set_compatibility, "orders-value", "BACKWARD")
        await run(client.register_schema, "orders-value", protobuf(order_file()))
        as_number = protobuf(order_file(T.TYPE_INT64))
        assert await run(refused, lambda: client.register_schema("orders-value", as_number)) == (
            409,
            409,
        )
        renamed = order_file()
        renamed.message_type[0].name = "Purchase"
        status = await run(
            refused, lambda: client.register_schema("orders-value", protobuf(renamed))
        )
        assert status == (409, 409)
        assert [h.type for h in await backend.schemas.history(ORDERS)] == ["PROTOBUF_NATIVE"]
        as_bytes = protobuf(order_file(T.TYPE_BYTES))
        assert await run(client.register_schema, "orders-value", as_bytes) > 0
        assert len(await backend.schemas.history(ORDERS)) == 2
