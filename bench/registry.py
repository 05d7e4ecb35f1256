"""What kop's Schema Registry costs (`python -m bench.registry`, issue 38).

Two questions, one kop (its registry on) against the shared Pulsar:

1. **REST latency per request**, kop's registry beside a reference registry (Apicurio
   Registry in its Confluent-compatible API, as `python -m conformance --registry` runs
   it): `--requests` each of register (a schema already there: what a serializer's
   first record asks), get by id (a deserializer's), latest version and lookup, on one
   kept-alive connection, one at a time.
2. **The framing at the edge**: Avro and Protobuf records in Confluent's framing
   produced and consumed through kop on topics whose schema is in Pulsar (stored bare in
   the schema's version, framed again when read) and Avro ones on a topic with
   `kop.schema.registry.framing` false (stored as they came): records/s and kop's CPU
   per MB each way.

The report (markdown) on stdout, the figures in bench/results/registry.json, a plot in
docs/images/registry.png, and with --write in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor_pb2 import FieldDescriptorProto, FileDescriptorProto

from bench.common import log, proc_ticks, pulsar_missing, pulsar_options, write_doc_section
from bench.kop_process import KopProcess, free_port
from bench.namespaces import bench_namespaces
from conformance.registry.apicurio import VERSION as APICURIO
from conformance.registry.apicurio import apicurio

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
PLOT = REPO / "docs" / "images" / "registry.png"
BEGIN, END = "<!-- registry:begin -->", "<!-- registry:end -->"
_TICK = os.sysconf("SC_CLK_TCK")
SCHEMA = {
    "type": "record", "name": "Reading", "namespace": "bench",
    "fields": [{"name": "sensor", "type": "string"}, {"name": "value", "type": "long"},
               {"name": "note", "type": "string"}],
}  # fmt: skip
KINDS = ("register (already there)", "schema by id", "latest version", "lookup")


def _cpu_s(pid: int) -> float:
    return (proc_ticks(pid) or 0) / _TICK


def rest_latency(base: str, requests: int) -> dict[str, float]:
    """Median ms per request kind, on one kept-alive connection."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    prefix = url.path
    subject = f"bench-{uuid.uuid4().hex[:8]}-value"
    body = json.dumps({"schema": json.dumps(SCHEMA)})
    headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}

    def call(method: str, path: str, data: str | None = None) -> Any:
        conn.request(method, prefix + path, body=data, headers=headers)
        answer = conn.getresponse()
        text = answer.read()
        assert answer.status == 200, (path, answer.status, text[:200])
        return json.loads(text)

    sid = call("POST", f"/subjects/{subject}/versions", body)["id"]
    asks = {
        KINDS[0]: ("POST", f"/subjects/{subject}/versions", body),
        KINDS[1]: ("GET", f"/schemas/ids/{sid}", None),
        KINDS[2]: ("GET", f"/subjects/{subject}/versions/latest", None),
        KINDS[3]: ("POST", f"/subjects/{subject}", body),
    }
    out = {}
    for kind, (method, path, data) in asks.items():
        took = []
        for _ in range(requests):
            started = time.perf_counter()
            call(method, path, data)
            took.append((time.perf_counter() - started) * 1000)
        out[kind] = statistics.median(took)
    conn.close()
    return out


def _values(kind: str, client: SchemaRegistryClient, ctx: SerializationContext) -> list[bytes]:
    """1,000 readings as the serializer of `kind` frames them (Avro unless Protobuf)."""
    fields = [{"sensor": f"s{i % 100}", "value": i, "note": "x" * 64} for i in range(1000)]
    if not kind.startswith("Protobuf"):
        serialize = AvroSerializer(client, json.dumps(SCHEMA))
        return [serialize(f, ctx) for f in fields]
    reading = _reading_class()
    to_proto = ProtobufSerializer(reading, client, {})
    return [to_proto(reading(**f), ctx) for f in fields]


def _reading_class() -> Any:
    """bench.Reading {string sensor = 1; int64 value = 2; string note = 3;} (SCHEMA's)."""
    t = FieldDescriptorProto
    file = FileDescriptorProto(name="bench/reading.proto", package="bench", syntax="proto3")
    message = file.message_type.add(name="Reading")
    for number, (name, kind) in enumerate(
        (("sensor", t.TYPE_STRING), ("value", t.TYPE_INT64), ("note", t.TYPE_STRING)), 1
    ):
        message.field.add(name=name, number=number, type=kind, label=t.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Reading"))


def framing_cost(kop: KopProcess, registry: str, records: int) -> dict[str, dict[str, float]]:
    """Per topic kind: produce and consume records/s and kop's CPU ms per MB."""
    client = SchemaRegistryClient({"url": registry})
    admin = AdminClient({"bootstrap.servers": kop.bootstrap})
    run = uuid.uuid4().hex[:6]
    topics = {
        "Avro, converted": f"framed-{run}",
        "Protobuf, converted": f"proto-{run}",
        "framing off": f"raw-{run}",
    }
    off = {"kop.schema.registry.framing": "false"}
    for kind, topic in topics.items():
        config = off if kind == "framing off" else {}
        admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(60)
    out: dict[str, dict[str, float]] = {}
    for kind, topic in topics.items():
        ctx = SerializationContext(topic, MessageField.VALUE)
        values = _values(kind, client, ctx)
        size = sum(len(v) for v in values) / len(values)
        producer = Producer({"bootstrap.servers": kop.bootstrap, "linger.ms": 5})
        cpu, started = _cpu_s(kop.pid), time.perf_counter()
        for i in range(records):
            while True:
                try:
                    producer.produce(topic, values[i % len(values)])
                    break
                except BufferError:
                    producer.poll(0.01)
        producer.flush(120)
        produce_s, produce_cpu = time.perf_counter() - started, _cpu_s(kop.pid) - cpu
        consumer = Consumer(
            {
                "bootstrap.servers": kop.bootstrap,
                "group.id": f"g-{topic}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe([topic])  # fmt: skip
        got, cpu, started = 0, _cpu_s(kop.pid), time.perf_counter()
        deadline = time.monotonic() + 300
        while got < records and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 1.0):
                if msg.error() is None:
                    got += 1
        consume_s, consume_cpu = time.perf_counter() - started, _cpu_s(kop.pid) - cpu
        consumer.close()
        assert got == records, f"{topic}: read {got} of {records}"
        mb = records * size / 1e6
        out[kind] = {
            "record bytes": size,
            "produce records/s": records / produce_s,
            "consume records/s": records / consume_s,
            "produce kop CPU ms per MB": 1000 * produce_cpu / mb,
            "consume kop CPU ms per MB": 1000 * consume_cpu / mb,
        }
        log(f"{kind}: {out[kind]}")
    return out


def plot(latency: dict[str, dict[str, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.4))
    width = 0.38
    xs = range(len(KINDS))
    for shift, (name, color) in zip((-width / 2, width / 2),
                                    (("kop", "#2a7ab0"), (f"Apicurio {APICURIO}", "#999999")),
                                    strict=True):  # fmt: skip
        ax.bar([x + shift for x in xs], [latency[name][k] for k in KINDS], width, label=name,
               color=color)  # fmt: skip
    ax.set_xticks(list(xs), KINDS)
    ax.set_ylabel("median ms per request")
    ax.set_title("Schema Registry REST latency, one request at a time")
    ax.legend()
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)


def report(latency: dict[str, dict[str, float]], framing: dict[str, dict[str, float]],
           commit: str, requests: int, records: int) -> str:  # fmt: skip
    names = list(latency)
    lines = [
        BEGIN,
        "## The Schema Registry: REST latency and the framing at the edge",
        "",
        f"`python -m bench.registry` (kop `{commit}`), {time.strftime('%Y-%m-%d')}: {requests}"
        " requests of each kind, one at a time on one kept-alive connection, median ms:",
        "",
        "| request | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
        *(f"| {k} | " + " | ".join(f"{latency[n][k]:.2f}" for n in names) + " |" for k in KINDS),
        "",
        f"{records:,} records in Confluent's framing through kop, produced then consumed"
        " (confluent-kafka), Avro and Protobuf on topics whose schema is in Pulsar (converted)"
        " and Avro on one with `kop.schema.registry.framing=false`:",
        "",
        "| | " + " | ".join(framing) + " |",
        "|---|" + "---:|" * len(framing),
    ]
    for row in next(iter(framing.values())):
        lines.append(f"| {row} | " + " | ".join(f"{framing[k][row]:,.1f}" for k in framing) + " |")
    lines += ["", f"![registry latency](images/{PLOT.name})", END]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--records", type=int, default=200_000)
    pulsar_options(parser)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    if pulsar_missing(args.http_url):
        return 2
    RESULTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with (
        bench_namespaces(args.http_url, "registry") as env,
        KopProcess(RESULTS / "registry-kop.log", pulsar_url=args.pulsar_url,
                   http_url=args.http_url,
                   env={**env, "KOP_SCHEMA_REGISTRY_PORT": str(port)}) as kop,
        apicurio(free_port(), free_port(), RESULTS / "registry-apicurio.log") as reference,
    ):  # fmt: skip
        kop_url = f"http://127.0.0.1:{port}"
        latency = {"kop": rest_latency(kop_url, args.requests),
                   f"Apicurio {APICURIO}": rest_latency(reference, args.requests)}  # fmt: skip
        log(f"latency: {latency}")
        framing = framing_cost(kop, kop_url, args.records)
    commit = os.popen(f"git -C {REPO} rev-parse --short HEAD").read().strip()
    (RESULTS / "registry.json").write_text(
        json.dumps({"commit": commit, "latency": latency, "framing": framing}, indent=1)
    )
    plot(latency)
    section = report(latency, framing, commit, args.requests, args.records)
    print(section)
    if args.write:
        write_doc_section(DOC, section, BEGIN, END, "")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
