"""Protobuf subjects, driven by confluent-kafka's ProtobufSerializer and
ProtobufDeserializer over the in-memory storage: kop keeps them under subjects that
name no topic (RecordNameStrategy), checks evolutions with Confluent's Protobuf rules,
and refuses a topic's subject with a one-line 42201 until Pulsar holds Protobuf."""

from __future__ import annotations

import base64
from typing import Any

from confluent_kafka.schema_registry import Schema, record_subject_name_strategy
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor_pb2 import FieldDescriptorProto, FileDescriptorProto

from tests.gateway.registry_harness import consume, produce, refused, registry, run

T = FieldDescriptorProto


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


async def test_a_topics_subject_and_proto_text_are_refused_with_one_line() -> None:
    async with registry() as (client, _, _g):
        for subject, schema in (
            ("orders-value", protobuf(order_file())),
            (
                "shop.Order",
                Schema('syntax = "proto3"; message Order { int64 id = 1; }', "PROTOBUF"),
            ),
        ):
            status, code = await run(
                refused, lambda s=subject, x=schema: client.register_schema(s, x)
            )
            assert (status, code) == (422, 42201)
