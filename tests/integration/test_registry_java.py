"""Java applications on kop's registry, unmodified: a producer and a consumer with
Apicurio's Avro serdes (Maven Central's; Confluent's are not there) and Kafka
Connect's AvroConverter, speaking Apicurio's v2 REST API to kop with Confluent's
framing in the value. What they write is read by confluent-kafka's deserializer and by
a Pulsar consumer with the matching `AvroSchema`: one id, one schema, every client."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pulsar
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pulsar.schema import AvroSchema, Integer, Record, String

from tests.integration.clients import cf_consume
from tests.integration.conftest import PULSAR_URL, KopProcess, free_port

JAVA_DIR = Path(__file__).resolve().parent / "java_registry"
CACHES = Path(os.environ.get("KOP_CACHE_DIR", "~/.cache/kop")).expanduser()
CACHE = CACHES / "apicurio-serdes-2.6.13"
N = 5


class Reading(Record):  # type: ignore[misc]  # pulsar-client is untyped
    _avro_namespace = "kop.it"
    sensor = String(required=True)
    value = Integer(required=True)


@pytest.fixture(scope="session")
def serdes_classpath() -> str:
    marker = CACHE / ".complete"
    if not marker.exists():
        assert shutil.which("mvn") and shutil.which("java"), "Java 17 and Maven are required"
        staging = CACHE.with_suffix(".partial")
        shutil.rmtree(staging, ignore_errors=True)
        pom = str(JAVA_DIR / "pom.xml")
        subprocess.run(
            ["mvn", "-B", "-q", "-f", pom, "dependency:copy-dependencies",
             f"-DoutputDirectory={staging}"],
            check=True,
        )  # fmt: skip
        shutil.rmtree(CACHE, ignore_errors=True)
        staging.rename(CACHE)
        marker.touch()
    return f"{CACHE}/*"


def _values(bootstrap: str, topic: str) -> list[bytes | None]:
    return [r.value for r in cf_consume(bootstrap, topic, N, reset="earliest")]


@pytest.mark.usefixtures("pulsar")
def test_java_serdes_and_connect_converter_share_one_registry_with_every_client(
    tmp_path: Path, serdes_classpath: str
) -> None:
    port = free_port()
    kop = KopProcess(tmp_path, KOP_SCHEMA_REGISTRY_PORT=str(port))
    topic = f"sr-java-{uuid.uuid4().hex[:10]}"
    client = pulsar.Client(PULSAR_URL)
    try:
        kop.start()
        admin = AdminClient({"bootstrap.servers": kop.bootstrap})
        admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
        url = f"http://127.0.0.1:{port}"
        out = subprocess.run(
            ["java", "-cp", serdes_classpath, str(JAVA_DIR / "ApicurioSerdes.java"),
             kop.bootstrap, f"{url}/apis/registry/v2", topic, str(N), f"{topic}-connect"],
            capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]
        lines = out.stdout.splitlines()
        assert f"PRODUCED {N}" in lines
        expected = [(f"s{i}", i * 10) for i in range(N)]
        assert [line for line in lines if line.startswith("RECORD ")] == [
            f"RECORD {s}|{v}" for s, v in expected
        ]
        assert "CONNECT c1|7" in lines
        assert "CONNECT BYTES 00" in "\n".join(lines)  # Confluent's magic byte, then the id
        # the id the Java producer framed is the Confluent API's: confluent-kafka reads it
        registry = SchemaRegistryClient({"url": url})
        ctx = SerializationContext(topic, MessageField.VALUE)
        deserialize = AvroDeserializer(registry)
        values = [deserialize(v, ctx) for v in _values(kop.bootstrap, topic)]
        assert [(v["sensor"], v["value"]) for v in values] == expected
        assert registry.get_versions(f"{topic}-value") == [1]
        # and the records are the topic's typed messages to a Pulsar application
        pulsar_consumer = client.subscribe(
            f"persistent://public/default/{topic}", "typed", schema=AvroSchema(Reading),
            initial_position=pulsar.InitialPosition.Earliest,
        )  # fmt: skip
        got = [pulsar_consumer.receive(30_000).value() for _ in range(N)]
        assert [(r.sensor, r.value) for r in got] == expected
    finally:
        client.close()
        kop.stop()
