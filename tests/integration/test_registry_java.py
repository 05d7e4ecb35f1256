"""Java applications on kop's registry, unmodified: producers and consumers with
Apicurio's Avro, Protobuf and JSON Schema serdes (Maven Central's; Confluent's are not
there) and Kafka Connect's AvroConverter, speaking Apicurio's v2 REST API to kop with
Confluent's framing in the value. What they write is read by confluent-kafka's
deserializers and by Pulsar consumers with the matching schema: one id, one schema,
every client. And a Kafka Connect worker with the converter on its plugin path, as
operators install it."""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulsar
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf.descriptor_pb2 import FileDescriptorProto
from pulsar.schema import AvroSchema, Integer, JsonSchema, Record, String

from tests.integration.clients import cf_consume
from tests.integration.conftest import PULSAR_URL, KopProcess, free_port
from tests.integration.maven import cached_classpath
from tests.integration.streams_connect.connect import (
    ConnectWorker,
    append_lines,
    complete_lines,
    create_connector,
)
from tests.integration.streams_connect.jvm import build_classpath, wait_until
from tests.integration.streams_connect.wordcount import create_topics
from tests.integration.test_schema_registry_kop import TICKET_JSON, Ticket

JAVA_DIR = Path(__file__).resolve().parent / "java_registry"
N = 5


class Reading(Record):  # type: ignore[misc]  # pulsar-client is untyped
    _avro_namespace = "kop.it"
    sensor = String(required=True)
    value = Integer(required=True)


@pytest.fixture(scope="session")
def apps_classpath() -> str:
    return build_classpath()


@pytest.fixture(scope="session")
def serdes_classpath() -> str:
    return cached_classpath(JAVA_DIR / "pom.xml", "apicurio-serdes-2.6.13-protobuf")


def _values(bootstrap: str, topic: str) -> list[bytes | None]:
    return [r.value for r in cf_consume(bootstrap, topic, N, reset="earliest")]


@dataclass
class JavaSide:
    """A kop with its registry, a one-partition topic and a Pulsar client, for a Java
    program of java_registry/ to run against."""

    kop: KopProcess
    topic: str
    url: str
    client: pulsar.Client
    classpath: str

    def run(self, program: str, *more: str) -> list[str]:
        """The program's printed lines, once it exited 0: `program` <bootstrap>
        <Apicurio v2 API> <topic> <N> `more`."""
        out = subprocess.run(
            ["java", "-cp", self.classpath, str(JAVA_DIR / program), self.kop.bootstrap,
             f"{self.url}/apis/registry/v2", self.topic, str(N), *more],
            capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout.splitlines()

    def typed(self, schema: object) -> list[Any]:
        """The topic's N first messages to a Pulsar consumer with `schema`."""
        consumer = self.client.subscribe(
            f"persistent://public/default/{self.topic}", "typed", schema=schema,
            initial_position=pulsar.InitialPosition.Earliest,
        )  # fmt: skip
        return [consumer.receive(30_000).value() for _ in range(N)]


@contextlib.contextmanager
def java_side(tmp_path: Path, classpath: str, prefix: str) -> Iterator[JavaSide]:
    port = free_port()
    kop = KopProcess(tmp_path, KOP_SCHEMA_REGISTRY_PORT=str(port))
    topic = f"{prefix}-{uuid.uuid4().hex[:10]}"
    client = pulsar.Client(PULSAR_URL)
    try:
        kop.start()
        admin = AdminClient({"bootstrap.servers": kop.bootstrap})
        admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
        yield JavaSide(kop, topic, f"http://127.0.0.1:{port}", client, classpath)
    finally:
        client.close()
        kop.stop()


@pytest.mark.usefixtures("pulsar")
def test_java_serdes_and_connect_converter_share_one_registry_with_every_client(
    tmp_path: Path, serdes_classpath: str
) -> None:
    with java_side(tmp_path, serdes_classpath, "sr-java") as side:
        lines = side.run("ApicurioSerdes.java", f"{side.topic}-connect")
        assert f"PRODUCED {N}" in lines
        expected = [(f"s{i}", i * 10) for i in range(N)]
        assert [line for line in lines if line.startswith("RECORD ")] == [
            f"RECORD {s}|{v}" for s, v in expected
        ]
        assert "CONNECT c1|7" in lines
        assert "CONNECT BYTES 00" in "\n".join(lines)  # Confluent's magic byte, then the id
        # the id the Java producer framed is the Confluent API's: confluent-kafka reads it
        registry = SchemaRegistryClient({"url": side.url})
        ctx = SerializationContext(side.topic, MessageField.VALUE)
        deserialize = AvroDeserializer(registry)
        values = [deserialize(v, ctx) for v in _values(side.kop.bootstrap, side.topic)]
        assert [(v["sensor"], v["value"]) for v in values] == expected
        assert registry.get_versions(f"{side.topic}-value") == [1]
        # and the records are the topic's typed messages to a Pulsar application
        assert [(r.sensor, r.value) for r in side.typed(AvroSchema(Reading))] == expected


@pytest.mark.usefixtures("pulsar")
def test_java_protobuf_serdes_read_back_the_proto_text_kop_writes(
    tmp_path: Path, serdes_classpath: str
) -> None:
    """Apicurio's Protobuf serializer registers `.proto` text, which kop compiles with
    protoc; its deserializer reads every record through the `.proto` text kop writes back
    from the descriptor, parsed by its own parser (Square's Wire), not protoc's. The
    Confluent API shows the same schema as text and as a descriptor."""
    with java_side(tmp_path, serdes_classpath, "sr-java-pb") as side:
        lines = side.run("ApicurioProtobuf.java")
        assert f"PRODUCED {N}" in lines
        assert [line for line in lines if line.startswith("RECORD ")] == [
            f"RECORD s{i}|{i * 10}" for i in range(N)
        ]
        subject = f"{side.topic}-value"
        text = SchemaRegistryClient({"url": side.url}).get_latest_version(subject).schema
        assert text.schema_type == "PROTOBUF"
        assert "message Reading {" in text.schema_str
        described = SchemaRegistryClient({"url": side.url}).get_latest_version(
            subject, "serialized"
        )
        file = FileDescriptorProto.FromString(base64.b64decode(described.schema.schema_str))
        assert [(f.name, f.number) for f in file.message_type[0].field] == [
            ("sensor", 1), ("value", 2),
        ]  # fmt: skip


@pytest.mark.usefixtures("pulsar")
def test_java_json_schema_serdes_validate_against_the_topics_schema(
    tmp_path: Path, serdes_classpath: str
) -> None:
    """Apicurio's JSON Schema serializer finds the topic's latest JSON Schema (registered
    by a Python client), validates each value against it (a value it does not allow is
    refused in the producer) and frames it; its deserializer, confluent-kafka's and a
    Pulsar `JsonSchema` consumer read the records."""
    with java_side(tmp_path, serdes_classpath, "sr-java-json") as side:
        registry = SchemaRegistryClient({"url": side.url})
        ticket = Schema(json.dumps(TICKET_JSON), "JSON")
        schema_id = registry.register_schema(f"{side.topic}-value", ticket)
        lines = side.run("ApicurioJson.java")
        assert f"PRODUCED {N}" in lines and "REFUSED" in lines
        expected = [(f"j{i}", i) for i in range(N)]
        assert [line for line in lines if line.startswith("RECORD ")] == [
            f"RECORD {code}|{count}" for code, count in expected
        ]
        values = _values(side.kop.bootstrap, side.topic)
        assert {int.from_bytes((v or b"")[1:5], "big") for v in values} == {schema_id}
        ctx = SerializationContext(side.topic, MessageField.VALUE)
        deserialize = JSONDeserializer(None, schema_registry_client=registry)
        assert [(d["code"], d["count"]) for d in (deserialize(v, ctx) for v in values)] == expected
        assert [(t.code, t.count) for t in side.typed(JsonSchema(Ticket))] == expected


# What a Connect plugin directory leaves to the worker: Kafka's own classes (Connect
# loads org.apache.kafka.* from the worker, not the plugin) and the logging binding.
_WORKERS_OWN = ("kafka-clients-", "connect-api-", "connect-json-", "slf4j-")
CONVERTER = {
    "value.converter": "io.apicurio.registry.utils.converter.AvroConverter",
    "value.converter.apicurio.registry.auto-register": "true",
    "value.converter.apicurio.registry.as-confluent": "true",
    "value.converter.apicurio.registry.headers.enabled": "false",
}


def _plugin_dir(serdes_classpath: str, root: Path) -> Path:
    """Apicurio's converter installed as an operator installs a Connect plugin: its
    jars in a directory of its own under `plugin.path`."""
    plugin = root / "plugins" / "apicurio-converter"
    plugin.mkdir(parents=True)
    for jar in Path(serdes_classpath.removesuffix("/*")).glob("*.jar"):
        if not jar.name.startswith(_WORKERS_OWN):
            (plugin / jar.name).symlink_to(jar)
    return plugin.parent


@pytest.mark.timeout(600)
@pytest.mark.usefixtures("pulsar")
def test_a_connect_worker_with_the_converter_writes_and_reads_through_kops_registry(
    tmp_path: Path, serdes_classpath: str, apps_classpath: str
) -> None:
    """Kafka Connect 4.3.1, unmodified, with Apicurio's AvroConverter from its plugin
    path: a FileStreamSource writes each line as an Avro string framed with the id kop's
    registry gave `<topic>-value` (the Pulsar topic's schema), a FileStreamSink reads
    them back through the same converter, confluent-kafka's deserializer reads what the
    worker wrote, and Pulsar holds each value bare (the framing is kop's edge)."""
    port = free_port()
    kop = KopProcess(tmp_path, KOP_SCHEMA_REGISTRY_PORT=str(port))
    topic = f"sr-connect-{uuid.uuid4().hex[:10]}"
    client = pulsar.Client(PULSAR_URL)
    url = f"http://127.0.0.1:{port}"
    converter = {**CONVERTER, "value.converter.apicurio.registry.url": f"{url}/apis/registry/v2"}
    source, sink = tmp_path / "source.txt", tmp_path / "sink.txt"
    append_lines(source, 0, N * 4)
    kop.start()
    plugins = _plugin_dir(serdes_classpath, tmp_path)
    worker = ConnectWorker(
        apps_classpath, kop.bootstrap, tmp_path, extra={"plugin.path": str(plugins)}
    )
    try:
        create_topics(kop.bootstrap, {topic: 1})
        worker.start()
        wait_until("the REST API", lambda: worker.rest("GET", "/connectors")[0] == 200, 120,
                   lambda: str(worker.rest("GET", "/connectors")), [worker])  # fmt: skip
        connectors = {
            "avro-source": {"connector.class": "FileStreamSource", "tasks.max": "1",
                            "file": str(source), "topic": topic, **converter},
            "avro-sink": {"connector.class": "FileStreamSink", "tasks.max": "1",
                          "file": str(sink), "topics": topic, **converter},
        }  # fmt: skip
        for name, config in connectors.items():
            create_connector(worker, name, config)
        wait_until(f"{N * 4} lines in the sink", lambda: len(complete_lines(sink)) >= N * 4, 180,
                   lambda: worker.statuses(list(connectors)), [worker])  # fmt: skip
        assert complete_lines(sink) == complete_lines(source)
        registry = SchemaRegistryClient({"url": url})
        assert (
            json.loads(registry.get_latest_version(f"{topic}-value").schema.schema_str) == "string"
        )
        ctx = SerializationContext(topic, MessageField.VALUE)
        deserialize = AvroDeserializer(registry)
        records = cf_consume(kop.bootstrap, topic, N * 4, reset="earliest")
        assert [deserialize(r.value, ctx) for r in records] == complete_lines(source)
        # stored bare in Pulsar: an Avro string (its zigzag length, then its bytes)
        reader = client.create_reader(
            f"persistent://public/default/{topic}", pulsar.MessageId.earliest
        )
        line = complete_lines(source)[0]
        assert reader.read_next(30_000).data() == bytes([2 * len(line)]) + line.encode()
    finally:
        client.close()
        worker.stop()
        kop.stop()
