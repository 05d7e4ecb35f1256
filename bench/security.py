"""What authentication and TLS cost (`python -m bench.security [--write]`).

One kop against the shared Pulsar with three listeners side by side: PLAINTEXT,
SASL_PLAINTEXT and SASL_SSL (PLAIN with a `token:<JWT>` password, authorization on,
the bench's role granted produce and consume). On each in turn, in the same run:
librdkafka produces `--records` records of 1 KiB (acks=all) and reads them back, and
a client opens connections one after another for `--seconds` (TCP, TLS handshake where
there is one, SASL, ApiVersions, Metadata, close). Ratios are against PLAINTEXT.
Progress lines as it goes; the report (markdown) on stdout, the figures in
bench/results/security.json, a plot in docs/images/security.png and, with --write,
the section in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import ssl
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.types import TopicName

from bench.common import head_commit, log, pulsar_healthy, write_doc_section
from bench.kop_process import KopProcess, free_port
from conformance.clients.raw import RawClient
from tests.tls_material import Ca, TokenKeys

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
PLOT = REPO / "docs" / "images" / "security.png"
BEGIN, END = "<!-- security:begin -->", "<!-- security:end -->"
LISTENERS = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL")
ROLE = "bench"


def _grant(http_url: str, namespace: str) -> None:
    req = urllib.request.Request(
        f"{http_url}/admin/v2/namespaces/{namespace}/permissions/{ROLE}",
        data=json.dumps(["produce", "consume"]).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    urllib.request.urlopen(req, timeout=30).close()


def _conf(listener: str, port: int, token: str, ca: Path) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": f"localhost:{port}", "security.protocol": listener}
    if "SASL" in listener:
        conf.update({"sasl.mechanisms": "PLAIN", "sasl.username": "public/default",
                     "sasl.password": f"token:{token}"})  # fmt: skip
    if "SSL" in listener:
        conf["ssl.ca.location"] = str(ca)
    return conf


def _produce(conf: dict[str, Any], topic: str, n: int) -> float:
    producer = Producer({**conf, "acks": "all", "linger.ms": 5, "batch.size": 256 * 1024})
    value = b"x" * 1024
    started = time.monotonic()
    for i in range(n):
        while True:
            try:
                producer.produce(topic, value, key=str(i % 64).encode())
                break
            except BufferError:
                producer.poll(0.05)
        if i % 20_000 == 0 and i:
            log(f"  produced {i:,} ({i / (time.monotonic() - started):,.0f} rec/s)")
    assert producer.flush(120) == 0, "records left unsent"
    return n / (time.monotonic() - started)


def _consume(conf: dict[str, Any], topic: str, n: int) -> float:
    consumer = Consumer({**conf, "group.id": f"bench-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    seen, started = 0, None
    deadline = time.monotonic() + 300
    while seen < n and time.monotonic() < deadline:
        for msg in consumer.consume(1000, 1.0):
            if msg.error() is None:
                started = started or time.monotonic()
                seen += 1
    consumer.close()
    assert seen >= n, f"read {seen} of {n}"
    assert started is not None
    return n / (time.monotonic() - started)


def _connections(listener: str, port: int, token: str, ca: Path, seconds: float) -> float:
    tls = ssl.create_default_context(cafile=str(ca)) if "SSL" in listener else None
    topics = [MetadataRequestTopic(topic_id=None, name=TopicName("bench-security-probe"))]
    done, started = 0, time.monotonic()
    while time.monotonic() - started < seconds:
        client = RawClient(port, timeout=10, host="localhost", tls=tls)
        client.request(18, 3, client_software_name="bench", client_software_version="1")
        if "SASL" in listener:
            answer = client.sasl_plain("public/default", f"token:{token}")
            assert answer.error_code == 0, answer
        client.request(3, 12, topics=topics, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False)  # fmt: skip
        client.close()
        done += 1
    return done / (time.monotonic() - started)


def _measure(args: argparse.Namespace, listener: str, port: int, token: str, ca: Ca,
             round_: int) -> dict[str, float]:  # fmt: skip
    conf = _conf(listener, port, token, ca.cert_file)
    topic = f"bench-sec-{listener.lower()}-{uuid.uuid4().hex[:6]}"
    log(f"round {round_}, {listener}: produce {args.records:,} records of 1 KiB, read them back")
    produced = _produce(conf, topic, args.records)
    consumed = _consume(conf, topic, args.records)
    rate = _connections(listener, port, token, ca.cert_file, args.seconds)
    log(f"round {round_}, {listener}: produce {produced:,.0f} rec/s, consume {consumed:,.0f} "
        f"rec/s, {rate:,.1f} connections/s")  # fmt: skip
    return {"produce_rec_s": produced, "consume_rec_s": consumed, "connections_s": rate}


def run(args: argparse.Namespace) -> dict[str, Any]:
    if not pulsar_healthy(args.pulsar_http):
        raise SystemExit(f"no healthy Pulsar at {args.pulsar_http}: python3 tools/pulsar.py start")
    work = Path(tempfile.mkdtemp(prefix="kop-bench-security-"))
    ca = Ca.make(work / "ca")
    cert, key = ca.issue("kop", "localhost", server=True)
    keys = TokenKeys.make(work / "keys")
    token = keys.token(ROLE)
    _grant(args.pulsar_http, "public/default")
    ports = {"SASL_PLAINTEXT": free_port(), "SASL_SSL": free_port()}
    env = {"KOP_SSL_CERT_FILE": str(cert), "KOP_SSL_KEY_FILE": str(key),
           "KOP_AUTH_TOKEN_SECRET_KEY": keys.spec, "KOP_AUTHORIZATION_ENABLED": "true",
           "KOP_ANONYMOUS_ROLE": ROLE,
           # connections opened one after another from this host: measured, not refused
           "KOP_MAX_CONNECTION_CREATION_RATE_PER_IP": "100000"}  # fmt: skip
    kop = KopProcess(RESULTS / "security-kop.log", pulsar_url=args.pulsar_url,
                     http_url=args.pulsar_http, env=env)  # fmt: skip
    ports["PLAINTEXT"] = kop.port  # the port kop is told; the listeners say where
    env["KOP_LISTENERS"] = ",".join(f"{p}://127.0.0.1:{ports[p]}" for p in LISTENERS)
    env["KOP_ADVERTISED_LISTENERS"] = ",".join(f"{p}://localhost:{ports[p]}" for p in LISTENERS)
    kop.start()
    results: dict[str, Any] = {"records": args.records, "record_bytes": 1024,
                               "rounds": args.rounds, "listeners": {}}  # fmt: skip
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in LISTENERS}
    try:
        warm = _conf("PLAINTEXT", ports["PLAINTEXT"], token, ca.cert_file)
        log("warm-up: 20,000 records on PLAINTEXT (not counted)")
        _produce(warm, f"bench-sec-warm-{uuid.uuid4().hex[:6]}", 20_000)
        for round_ in range(1, args.rounds + 1):  # listeners interleaved: drift hits all alike
            for listener in LISTENERS:
                runs[listener].append(_measure(args, listener, ports[listener], token, ca, round_))
        for listener, measured in runs.items():
            results["listeners"][listener] = {
                key: round(sum(m[key] for m in measured) / len(measured), 1)
                for key in ("produce_rec_s", "consume_rec_s", "connections_s")
            }
    finally:
        kop.stop()
    results["kop"] = head_commit()
    return results


def markdown(r: dict[str, Any]) -> str:
    base = r["listeners"]["PLAINTEXT"]
    lines = [
        BEGIN,
        f"kop `{r['kop']}`, {r['records']:,} records of 1 KiB per listener and round, mean of "
        f"{r['rounds']} rounds (listeners interleaved, after a warm-up), librdkafka, "
        "acks=all; connections opened one after another (TLS handshake, SASL PLAIN with a "
        "token, ApiVersions, Metadata). Ratios against PLAINTEXT, same kop, same run.",
        "",
        "| listener | produce rec/s | ratio | consume rec/s | ratio | connections/s | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, m in r["listeners"].items():
        cells = [f"{name}"]
        for key in ("produce_rec_s", "consume_rec_s", "connections_s"):
            cells += [f"{m[key]:,.0f}", f"{m[key] / base[key]:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "![security](images/security.png)", END]
    return "\n".join(lines)


def plot(r: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(r["listeners"])
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    panels = (("produce_rec_s", "produce (rec/s)"), ("consume_rec_s", "consume (rec/s)"),
              ("connections_s", "connections/s"))  # fmt: skip
    for ax, (key, title) in zip(axes, panels, strict=True):
        ax.bar(names, [r["listeners"][n][key] for n in names], color=["#888", "#4a7", "#47a"])
        ax.set_title(title)
        ax.tick_params(axis="x", labelrotation=15)
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=2, help="each listener this many times")
    ap.add_argument("--pulsar-url", default="pulsar://localhost:6650")
    ap.add_argument("--pulsar-http", default="http://localhost:8080")
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = ap.parse_args()
    r = run(args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "security.json").write_text(json.dumps(r, indent=2))
    plot(r)
    text = markdown(r)
    print(text)
    if args.write:
        write_doc_section(DOC, text, BEGIN, END, "## Authentication and TLS: what they cost")


if __name__ == "__main__":
    main()
