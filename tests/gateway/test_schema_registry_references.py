"""Schema references, driven by confluent-kafka's own serializers over the in-memory
storage: a Protobuf message whose file imports another file (the serializer registers
the imported file under its own subject and the message's file with a reference to it),
and an Avro record of a record another subject defines, on subjects kop keeps and on a
topic's subject (Pulsar's version holds what the references name). A referenced version
is not deleted while a schema references it (42206), as in Confluent's registry."""

from __future__ import annotations

import base64
import json
from typing import Any

from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    record_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor_pb2 import (
    FieldDescriptorProto,
    FileDescriptorProto,
    FileDescriptorSet,
)

from kop.entries import framing
from kop.storage import batch_layout
from kop.storage.naming import Namespace, PulsarTopic
from tests.gateway.registry_harness import consume, produce, refused, registry, run
from tests.sim.memory_admin import MemoryBackend

T = FieldDescriptorProto
OPTIONAL = T.LABEL_OPTIONAL
RECORD_NAMES = {"subject.name.strategy": record_subject_name_strategy}


def order_class() -> Any:
    """shop.Order { int64 id = 1; common.Money price = 2; }, with Money in a file of its own."""
    money = FileDescriptorProto(name="common/money.proto", package="common", syntax="proto3")
    amount = money.message_type.add(name="Money")
    amount.field.add(name="cents", number=1, type=T.TYPE_INT64, label=OPTIONAL)
    amount.field.add(name="currency", number=2, type=T.TYPE_STRING, label=OPTIONAL)
    order = FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3")
    order.dependency.append("common/money.proto")
    message = order.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=T.TYPE_INT64, label=OPTIONAL)
    message.field.add(
        name="price", number=2, type=T.TYPE_MESSAGE, label=OPTIONAL, type_name=".common.Money"
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(money)
    pool.Add(order)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


async def test_a_protobuf_file_importing_another_is_registered_with_a_reference() -> None:
    async with registry() as (client, _, gateway):
        order = order_class()
        serialize = ProtobufSerializer(order, client, RECORD_NAMES)
        deserialize = ProtobufDeserializer(order, RECORD_NAMES)
        ctx = SerializationContext("orders", MessageField.VALUE)
        sent = order(id=1)
        sent.price.cents, sent.price.currency = 250, "EUR"
        value = await run(serialize, sent, ctx)
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        await run(produce, bootstrap, "orders", [value])
        (read,) = await run(consume, bootstrap, "orders", 1)
        got = deserialize(read, ctx)
        assert (got.id, got.price.cents, got.price.currency) == (1, 250, "EUR")
        # the imported file is a subject of its own, named by its path
        assert await run(client.get_subjects) == ["common/money.proto", "shop.Order"]
        latest = await run(client.get_latest_version, "shop.Order")
        assert latest.schema.references == [
            SchemaReference("common/money.proto", "common/money.proto", 1)
        ]
        assert 'import "common/money.proto";' in latest.schema.schema_str
        assert ".common.Money price = 2;" in latest.schema.schema_str
        # as .proto text with the same reference, the schema is the one registered
        again = Schema(latest.schema.schema_str, "PROTOBUF", latest.schema.references)
        fresh = SchemaRegistryClient(
            {"url": f"http://127.0.0.1:{gateway.config.schema_registry_port}"}
        )
        assert await run(fresh.register_schema, "shop.Order", again) == latest.schema_id
        # a referenced version stays while a schema references it
        money = await run(client.get_latest_version, "common/money.proto")
        assert await run(client.get_referenced_by, "common/money.proto", 1) == [latest.schema_id]
        assert await run(
            refused, lambda: client.delete_version("common/money.proto", money.version)
        ) == (422, 42206)
        assert await run(refused, lambda: client.delete_subject("common/money.proto")) == (
            422,
            42206,
        )
        # and without the reference, the import names nothing
        alone = Schema(latest.schema.schema_str, "PROTOBUF")
        assert await run(refused, lambda: fresh.register_schema("shop.Other", alone)) == (
            422,
            42201,
        )


MONEY = {
    "type": "record", "name": "Money", "namespace": "com.shop",
    "fields": [{"name": "cents", "type": "long"}, {"name": "currency", "type": "string"}],
}  # fmt: skip
ORDER = {
    "type": "record", "name": "Order", "namespace": "com.shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "price", "type": "com.shop.Money"}],
}  # fmt: skip


async def test_an_avro_record_of_a_record_another_subject_defines() -> None:
    async with registry() as (client, _, gateway):
        await run(client.register_schema, "com.shop.Money", Schema(json.dumps(MONEY), "AVRO"))
        ref = SchemaReference("com.shop.Money", "com.shop.Money", 1)
        order = Schema(json.dumps(ORDER), "AVRO", [ref])
        order_id = await run(client.register_schema, "com.shop.Order", order)
        assert await run(client.register_schema, "com.shop.Order", order) == order_id
        # the same text without the reference names a type nobody defines
        bare = Schema(json.dumps(ORDER), "AVRO")
        assert await run(refused, lambda: client.register_schema("com.shop.Other", bare)) == (
            422,
            42201,
        )
        # a reference to a version that is not there
        wrong = Schema(json.dumps(ORDER), "AVRO", [SchemaReference("com.shop.Money", "nope", 1)])
        assert await run(refused, lambda: client.register_schema("com.shop.Other", wrong)) == (
            422,
            42201,
        )
        # confluent-kafka's serializer and deserializer resolve the reference themselves
        conf = {**RECORD_NAMES, "auto.register.schemas": False, "use.latest.version": True}
        ctx = SerializationContext("orders", MessageField.VALUE)
        # built off the loop: it fetches the references from the registry this loop serves
        serialize = await run(lambda: AvroSerializer(client, order, conf=conf))
        record = {"id": 7, "price": {"cents": 999, "currency": "USD"}}
        value = await run(serialize, record, ctx)
        assert int.from_bytes(value[1:5], "big") == order_id
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        await run(produce, bootstrap, "orders", [value])
        (read,) = await run(consume, bootstrap, "orders", 1)
        assert await run(AvroDeserializer(client), read, ctx) == record
        # an evolution of the referencing schema is checked with the types it references
        await run(client.set_compatibility, "com.shop.Order", "BACKWARD")
        wider = {**ORDER, "fields": [*ORDER["fields"], {"name": "note", "type": "string"}]}
        new = Schema(json.dumps(wider), "AVRO", [ref])  # a field without a default
        assert await run(refused, lambda: client.register_schema("com.shop.Order", new)) == (
            409,
            409,
        )


ORDERS = PulsarTopic(Namespace("public", "default"), "orders", "orders")


def pulsar_payloads(backend: MemoryBackend) -> list[tuple[bytes | None, bytes]]:
    stored = [e for e in backend.log.topic(ORDERS.partition(0)).entries() if e.count]
    return [(e.schema_version, m.payload) for e in stored for m in batch_layout.messages(e)]


async def test_a_topics_protobuf_subject_with_an_imported_file_is_pulsars_whole_schema() -> None:
    """The serializer's default (TopicNameStrategy): `orders-value` references
    `common/money.proto`. Pulsar's PROTOBUF_NATIVE version holds both files, records are
    stored bare in it and read back framed with the id of the schema with its reference."""
    async with registry() as (client, backend, gateway):
        await backend.admin.create_partitioned(ORDERS, 1, {})
        order = order_class()
        serialize = ProtobufSerializer(order, client, {})
        ctx = SerializationContext("orders", MessageField.VALUE)
        sent = order(id=5)
        sent.price.cents = 100
        framed = await run(serialize, sent, ctx)
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        await run(produce, bootstrap, "orders", [framed])
        registered = await run(client.get_latest_version, "orders-value")
        assert registered.schema.references == [
            SchemaReference("common/money.proto", "common/money.proto", 1)
        ]
        assert int.from_bytes(framed[1:5], "big") == registered.schema_id
        (v0,) = await backend.schemas.history(ORDERS)
        native = json.loads(v0.data)
        files = FileDescriptorSet.FromString(base64.b64decode(native["fileDescriptorSet"]))
        assert [f.name for f in files.file] == ["common/money.proto", "default.proto"]
        assert native["rootMessageTypeName"] == "shop.Order"
        assert pulsar_payloads(backend) == [(framing.version_bytes(0), sent.SerializeToString())]
        (read,) = await run(consume, bootstrap, "orders", 1)
        assert read == framed
        got = await run(ProtobufDeserializer(order, {}), read, ctx)
        assert (got.id, got.price.cents) == (5, 100)
        # the subject keeps showing the schema with its reference, on any later look
        again = SchemaRegistryClient(
            {"url": f"http://127.0.0.1:{gateway.config.schema_registry_port}"}
        )
        latest = await run(again.get_latest_version, "orders-value")
        assert (latest.schema_id, latest.version) == (registered.schema_id, 1)
        assert await run(again.get_referenced_by, "common/money.proto", 1) == [latest.schema_id]


async def test_a_topics_avro_subject_with_a_reference_gives_pulsar_the_types_written_out() -> None:
    async with registry() as (client, backend, gateway):
        await backend.admin.create_partitioned(ORDERS, 1, {})
        await run(client.register_schema, "com.shop.Money", Schema(json.dumps(MONEY), "AVRO"))
        ref = SchemaReference("com.shop.Money", "com.shop.Money", 1)
        order = Schema(json.dumps(ORDER), "AVRO", [ref])
        order_id = await run(client.register_schema, "orders-value", order)
        assert await run(client.register_schema, "orders-value", order) == order_id
        (v0,) = await backend.schemas.history(ORDERS)
        whole = json.loads(v0.data)
        assert whole["fields"][1]["type"]["name"] == "Money"  # written out for Pulsar
        conf = {"auto.register.schemas": False, "use.latest.version": True}
        serialize = await run(lambda: AvroSerializer(client, order, conf=conf))
        ctx = SerializationContext("orders", MessageField.VALUE)
        record = {"id": 1, "price": {"cents": 5, "currency": "EUR"}}
        framed = await run(serialize, record, ctx)
        assert int.from_bytes(framed[1:5], "big") == order_id
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        await run(produce, bootstrap, "orders", [framed])
        assert pulsar_payloads(backend) == [(framing.version_bytes(0), framed[5:])]
        (read,) = await run(consume, bootstrap, "orders", 1)
        assert await run(AvroDeserializer(client), read, ctx) == record


ADDRESS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CUSTOMER = {
    "title": "com.shop.Customer",  # the record name strategy's subject
    "type": "object",
    "properties": {"name": {"type": "string"}, "address": {"$ref": "address.json"}},
    "required": ["name", "address"],
}


async def test_a_json_schema_names_another_subjects_schema_by_its_reference() -> None:
    """confluent-kafka's JSON serializer and deserializer resolve `address.json` through
    the reference kop keeps; a topic's subject refuses it, since Pulsar keeps a topic's
    JSON Schema as an Avro record and kop follows no `$ref` out of the schema into Avro."""
    async with registry() as (client, _, gateway):
        await run(client.register_schema, "address", Schema(json.dumps(ADDRESS), "JSON"))
        ref = SchemaReference("address.json", "address", 1)
        customer = Schema(json.dumps(CUSTOMER), "JSON", [ref])
        customer_id = await run(client.register_schema, "com.shop.Customer", customer)
        latest = await run(client.get_latest_version, "com.shop.Customer")
        assert latest.schema.references == [ref]
        conf = {**RECORD_NAMES, "auto.register.schemas": False, "use.latest.version": True}
        serialize = await run(lambda: JSONSerializer(customer, client, conf=conf))
        ctx = SerializationContext("customers", MessageField.VALUE)
        value = {"name": "Ada", "address": {"city": "London"}}
        framed = await run(serialize, value, ctx)
        assert int.from_bytes(framed[1:5], "big") == customer_id
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        await run(produce, bootstrap, "customers", [framed])
        (read,) = await run(consume, bootstrap, "customers", 1)
        assert await run(JSONDeserializer(None, schema_registry_client=client), read, ctx) == value
        assert await run(refused, lambda: client.register_schema("customers-value", customer)) == (
            422,
            42201,
        )
