"""The Schema Registry of a kop process over real Pulsar: confluent-kafka's client
registers a `<topic>-value` schema through kop, Pulsar's admin API and a typed Pulsar
producer see it as the topic's schema, an evolution registered through kop is Pulsar's
next version, and ids survive kop's restart (they are in Pulsar)."""

from __future__ import annotations

import json
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pulsar
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from pulsar.schema import AvroSchema, Record, String

from tests.integration.conftest import PULSAR_HTTP, PULSAR_URL, KopProcess, free_port


class Reading(Record):  # type: ignore[misc]  # pulsar-client is untyped
    _avro_namespace = "kop.it"
    sensor = String(required=True)


def pulsar_schemas(topic: str) -> list[dict[str, Any]]:
    url = f"{PULSAR_HTTP}/admin/v2/schemas/public/default/{topic}/schemas"
    with urllib.request.urlopen(url, timeout=10) as answer:
        found: list[dict[str, Any]] = json.load(answer)["getSchemaResponses"]
    return found


@pytest.mark.usefixtures("pulsar")
def test_a_subject_registered_through_kop_is_the_topics_schema_in_pulsar(tmp_path: Path) -> None:
    port = free_port()
    kop = KopProcess(tmp_path, KOP_SCHEMA_REGISTRY_PORT=str(port))
    kop.start()
    topic = f"sr-{uuid.uuid4().hex[:10]}"
    client = pulsar.Client(PULSAR_URL)
    try:
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
