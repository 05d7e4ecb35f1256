"""JSON Schema subjects, driven by confluent-kafka's SchemaRegistryClient and its JSON
Schema serializers over the in-memory storage: `<topic>-value` is the Pulsar topic's
JSON schema (the Avro record that reads the same documents, with the JSON Schema on
it), kop checks what Avro cannot say, and records are readable from both sides."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kop.entries import framing
from kop.registry.json_avro import JSON_SCHEMA_PROPERTY, avro_of
from kop.storage import batch_layout
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.schemas import SchemaRefused
from kop.storage.types import OutgoingEntry, OutgoingMessage
from tests.gateway.registry_harness import consume, produce, refused, registry, run

DEFAULT = Namespace("public", "default")
ORDERS = PulsarTopic(DEFAULT, "orders", "orders")

ORDER_V1: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}
# an optional property added to a closed content model: BACKWARD compatible
ORDER_V2 = {**ORDER_V1, "properties": {**ORDER_V1["properties"], "note": {"type": "string"}}}
# the same Avro form as v1, but it refuses items v1 wrote: only kop can tell
ORDER_TIGHT = {
    **ORDER_V1,
    "properties": {**ORDER_V1["properties"], "item": {"type": "string", "maxLength": 3}},
}
# item now required: neither the JSON Schema nor its Avro form reads v1's data
ORDER_REQUIRED = {**ORDER_V1, "required": ["id", "item"]}


def json_schema(value: Any) -> Schema:
    return Schema(json.dumps(value), "JSON")


def text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


async def test_a_topic_value_subject_in_json_schema_is_the_topics_json_schema() -> None:
    async with registry() as (client, backend, _):
        first = await run(client.register_schema, "orders-value", json_schema(ORDER_V1))
        assert await run(client.register_schema, "orders-value", json_schema(ORDER_V1)) == first
        (v0,) = await backend.schemas.history(ORDERS)
        assert v0.type == "JSON"
        stored = json.loads(v0.data)  # the Avro record a Pulsar JSON consumer reads with
        assert (stored["type"], stored["name"]) == ("record", "Order")
        assert [(f["name"], f["type"]) for f in stored["fields"]] == [
            ("id", "long"), ("item", ["null", "string"]),
        ]  # fmt: skip
        assert json.loads(stored[JSON_SCHEMA_PROPERTY]) == ORDER_V1
        by_id = await run(client.get_schema, first)
        assert (by_id.schema_type, json.loads(by_id.schema_str)) == ("JSON", ORDER_V1)
        found = await run(client.lookup_schema, "orders-value", json_schema(ORDER_V1))
        assert (found.version, found.schema_id) == (1, first)
        assert await run(client.get_schema_types) == ["AVRO", "JSON", "PROTOBUF"]


async def test_json_evolutions_are_checked_by_kop_and_by_pulsar() -> None:
    async with registry() as (client, backend, _):
        await run(client.register_schema, "orders-value", json_schema(ORDER_V1))
        await run(client.set_compatibility, "orders-value", "BACKWARD")
        assert await run(client.test_compatibility, "orders-value", json_schema(ORDER_V2))
        assert await run(client.register_schema, "orders-value", json_schema(ORDER_V2)) == 2
        # maxLength has no Avro form: Pulsar would take it, kop refuses it
        tight = json_schema({**ORDER_V2, "properties": ORDER_TIGHT["properties"]})
        assert await run(refused, lambda: client.register_schema("orders-value", tight)) == (
            409, 409,
        )  # fmt: skip
        assert not await run(client.test_compatibility, "orders-value", tight)
        # a property made required: both refuse it
        required = json_schema({**ORDER_V2, "required": ORDER_REQUIRED["required"]})
        assert await run(refused, lambda: client.register_schema("orders-value", required)) == (
            409, 409,
        )  # fmt: skip
        data = avro_of({**ORDER_V2, "required": ["id", "item"]}, required.schema_str)
        try:
            await backend.schemas.upload(ORDERS, "JSON", data)
        except SchemaRefused as exc:
            assert exc.incompatible
        else:
            raise AssertionError("Pulsar took a schema that cannot read the topic's data")
        assert [h.version for h in await backend.schemas.history(ORDERS)] == [0, 1]


async def test_what_has_no_avro_form_is_refused_for_a_topic_and_kept_for_a_key() -> None:
    anything = {"type": "object", "properties": {"first-name": {"type": "string"}}}
    async with registry() as (client, backend, _):
        for schema in ({"type": "string"}, anything, {"type": "object"}):
            status, code = await run(
                refused, lambda s=schema: client.register_schema("orders-value", json_schema(s))
            )
            assert (status, code) == (422, 42201)
        assert await backend.schemas.history(ORDERS) == []
        # a key subject is kop's alone: any JSON Schema, kop's own compatibility rules
        key_id = await run(client.register_schema, "orders-key", json_schema({"type": "string"}))
        await run(client.set_compatibility, "orders-key", "BACKWARD")
        narrower = json_schema({"type": "string", "maxLength": 8})
        assert await run(refused, lambda: client.register_schema("orders-key", narrower)) == (
            409, 409,
        )  # fmt: skip
        wider = json_schema({"type": ["string", "null"]})
        assert await run(client.register_schema, "orders-key", wider) == key_id + 1
        # not a JSON Schema at all, and .proto text protoc refuses
        for bad in (
            Schema('{"type": 5}', "JSON"),
            Schema("syntax = 'proto3'; message {", "PROTOBUF"),
        ):
            assert await run(refused, lambda b=bad: client.register_schema("x-key", b)) == (
                422, 42201,
            )  # fmt: skip


async def test_json_records_are_stored_bare_for_pulsar_and_read_back_framed() -> None:
    """The JSON serializer's records are Pulsar messages of the topic's JSON version
    (the bare document a Pulsar `JsonSchema` consumer decodes) and read back framed;
    a Pulsar JSON producer's version is a version whose JSON Schema its record reads."""
    async with registry() as (client, backend, gateway):
        await backend.admin.create_partitioned(ORDERS, 1, {})
        await run(client.set_compatibility, "orders-value", "BACKWARD")
        bootstrap = f"127.0.0.1:{gateway.kafka_port}"
        serialize = JSONSerializer(json.dumps(ORDER_V1), client)
        ctx = SerializationContext("orders", MessageField.VALUE)
        orders = [{"id": 1, "item": "tea"}, {"id": 2}]
        framed = [await run(serialize, order, ctx) for order in orders]
        await run(produce, bootstrap, "orders", framed)
        stored = [e for e in backend.log.topic(ORDERS.partition(0)).entries() if e.count]
        pulsar_view = [
            (e.schema_version, json.loads(m.payload))
            for e in stored
            for m in batch_layout.messages(e)
        ]
        assert pulsar_view == [(framing.version_bytes(0), order) for order in orders]
        assert await run(consume, bootstrap, "orders", 2) == framed
        # a Pulsar JSON producer's own record (no JSON Schema on it) adds version 1
        pulsar_record = {
            "type": "record", "name": "Order",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "item", "type": ["null", "string"], "default": None},
                {"name": "note", "type": ["null", "string"], "default": None},
            ],
        }  # fmt: skip
        assert await backend.schemas.upload(ORDERS, "JSON", json.dumps(pulsar_record)) == 1
        message = OutgoingMessage(b'{"id": 3, "item": null, "note": "hot"}', {}, None, None)
        typed = dataclasses.replace(
            OutgoingEntry.of(message), schema_version=framing.version_bytes(1)
        )
        backend.log.topic(ORDERS.partition(0)).append([typed], "pulsar-app", 0)
        values = await run(consume, bootstrap, "orders", 3)
        v2 = await run(client.get_version, "orders-value", 2)
        assert framing.schema_id(values[2]) == v2.schema_id
        shown = json.loads(v2.schema.schema_str)
        assert shown["required"] == ["id"]
        assert set(shown["properties"]) == {"id", "item", "note"}
        deserialize = JSONDeserializer(None, schema_registry_client=client)
        assert [await run(deserialize, v, ctx) for v in values] == [
            *orders, {"id": 3, "item": None, "note": "hot"},
        ]  # fmt: skip


async def test_a_json_schemas_check_runs_off_the_event_loop(monkeypatch: Any) -> None:
    """A JSON Schema's compatibility check may spend its whole budget (some 300 ms of
    CPU): on the event loop that would stall every Kafka connection of the instance, so
    it runs in a worker thread (it ran on the loop before)."""
    import threading

    from kop.registry import subjects

    loop_thread = threading.get_ident()
    threads: list[int] = []
    check = subjects.why_not_after

    def recorded(schema: Any, level: str, history: list[Any]) -> str | None:
        if history:  # nothing to check against: nothing costly
            threads.append(threading.get_ident())
        return check(schema, level, history)

    monkeypatch.setattr(subjects, "why_not_after", recorded)
    async with registry() as (client, _, _g):
        await run(client.set_compatibility, "order.Json", "BACKWARD")
        await run(client.register_schema, "order.Json", json_schema(ORDER_V1))
        await run(client.register_schema, "order.Json", json_schema(ORDER_V2))
        assert await run(client.test_compatibility, "order.Json", json_schema(ORDER_V2))
    assert len(threads) >= 2 and loop_thread not in threads
