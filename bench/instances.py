"""One kop instance against three, and a takeover of 1,000 partitions
(`python -m bench.instances`).

Scale: for 1 and then 3 kop processes on the shared Pulsar (each run a namespace of
its own), a topic of `--partitions` partitions spread over the instances; one
librdkafka producer (acks=all, bootstrap listing every instance) writes `--records`
records of 1 KiB as fast as it goes, then one consumer reads them all back from
offset 0 (every partition's offsets checked dense). Aggregate records/s and MB/s,
and the cores used meanwhile by kop's processes (together), Pulsar and the client.

Takeover: three instances serve a topic of `--takeover-partitions` (1,000)
partitions, every one of them opened by a first acknowledged record; an idempotent
producer writes round-robin over all of them. One instance is then killed with -9
(and in a last cycle stopped with SIGTERM, which hands its partitions over first):
the time until every partition it led has a record acknowledged again. At the end
the log must hold exactly what was acknowledged.

Progress on stderr; the report (markdown) on stdout, the figures in
bench/results/instances.json, a plot in docs/images/instances.png, and with --write
the section in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import (
    CpuMeter,
    Progress,
    Values,
    find_pulsar_pid,
    log,
    pulsar_missing,
    pulsar_options,
    write_doc_section,
)
from bench.failover import Writer, _check, _leaders, _until
from bench.kop_process import KopProcess
from bench.namespaces import bench_namespaces

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
PLOT = REPO / "docs" / "images" / "instances.png"
BEGIN, END = "<!-- instances:begin -->", "<!-- instances:end -->"
VALUE_BYTES = 1024


def start_nodes(
    n: int, args: argparse.Namespace, label: str, held: dict[str, str]
) -> list[KopProcess]:
    """`n` instances of one cluster, in the namespaces `held` names (bench.namespaces)."""
    env = {
        **held,
        "KOP_OFFSETS_TOPIC_PARTITIONS": "4",
        "KOP_CLUSTER_SECRET": f"bench-secret-{uuid.uuid4().hex[:8]}",
    }
    nodes = [
        KopProcess(RESULTS / "instances-logs" / f"{label}-{i}.log", pulsar_url=args.pulsar_url,
                   http_url=args.http_url, env={**env, "KOP_NODE_ID": str(i)})
        for i in range(n)
    ]  # fmt: skip
    for node in nodes:
        node.start()
    return nodes


def spread_topic(bootstrap: str, topic: str, partitions: int, instances: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(60)
    everyone = set(range(instances))
    _until(f"{topic} led by all {instances}",
           lambda: set(_leaders(bootstrap, topic).values()) == everyone, 60)  # fmt: skip


def drop_topic(bootstrap: str, topic: str) -> None:
    """A run leaves nothing behind: 1,000 loaded partitions per run slowed the local
    Pulsar's producer creation to seconds after a few runs."""
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})  # held: a collected one fails
        admin.delete_topics([topic])[topic].result(120)
    except Exception as exc:  # the figures stand; say what is left
        log(f"  could not delete {topic}: {exc}")


def produce(bootstrap: str, topic: str, count: int, values: Values) -> tuple[float, int]:
    """(seconds, errors) for `count` records, keyed so they spread over the partitions."""
    errors: list[Any] = []
    p = Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
        "batch.size": 256 * 1024, "queue.buffering.max.messages": 20_000,
        "delivery.report.only.error": True, "message.timeout.ms": 120_000,
        "on_delivery": lambda err, _msg: errors.append(err) if err else None,
    })  # fmt: skip
    prog = Progress("  produce", count, VALUE_BYTES + 16)
    start = time.perf_counter()
    for i in range(count):
        while True:
            try:
                p.produce(topic, key=b"%016d" % i, value=values[i])
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
            prog.tick(i)
    left = p.flush(180)
    prog.tick(count, force=True)
    return time.perf_counter() - start, len(errors) + left


def consume(bootstrap: str, topic: str, partitions: int, count: int) -> tuple[float, int]:
    """(seconds, records out of place) reading `count` records from offset 0."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-instances",
                  "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})  # fmt: skip
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    expected = [0] * partitions
    got = bad = 0
    prog = Progress("  consume", count, VALUE_BYTES + 16)
    start = last = time.perf_counter()
    try:
        while got < count and time.perf_counter() - last < 30:
            for m in c.consume(num_messages=10_000, timeout=0.5):
                p = m.partition() or 0
                if m.error() is not None or m.offset() != expected[p]:
                    bad += 1
                    continue
                expected[p] += 1
                got += 1
                last = time.perf_counter()
            prog.tick(got)
    finally:
        c.close()
    prog.tick(got, force=True)
    return time.perf_counter() - start, bad + (count - got)


def scale_run(n: int, args: argparse.Namespace) -> dict[str, Any]:
    with bench_namespaces(args.http_url, f"scale{n}") as held:
        return _scale_run(n, args, held)


def _scale_run(n: int, args: argparse.Namespace, held: dict[str, str]) -> dict[str, Any]:
    log(f"{n} instance{'s' if n > 1 else ''}:")
    nodes = start_nodes(n, args, f"scale{n}", held)
    bootstrap = ",".join(node.bootstrap for node in nodes)
    try:
        topic = "scale"
        spread_topic(bootstrap, topic, args.partitions, n)
        values = Values(VALUE_BYTES)
        cpu = CpuMeter()
        cpu.pids = {f"kop{i}": node.pid for i, node in enumerate(nodes)}
        cpu.pids["pulsar"] = find_pulsar_pid() or 0
        before = cpu.sample()
        produce_s, produce_errors = produce(bootstrap, topic, args.records, values)
        middle = cpu.sample()
        consume_s, consume_errors = consume(bootstrap, topic, args.partitions, args.records)
        produce_cpu, consume_cpu = _cores(before, middle), _cores(middle, cpu.sample())
    finally:
        drop_topic(bootstrap, topic)
        for node in nodes:
            node.stop()
    mb = args.records * (VALUE_BYTES + 16) / 1e6
    return {
        "instances": n, "records": args.records, "partitions": args.partitions,
        "produce_rps": args.records / produce_s, "produce_mbs": mb / produce_s,
        "consume_rps": args.records / consume_s, "consume_mbs": mb / consume_s,
        "produce_cpu": produce_cpu, "consume_cpu": consume_cpu,
        "errors": produce_errors + consume_errors,
    }  # fmt: skip


def _cores(a: Any, b: Any) -> dict[str, float]:
    """Average cores used between two samples: kop's processes summed."""
    used = CpuMeter.usage(a, b)
    kop = sum(v for k, v in used.items() if k.startswith("kop"))
    return {"kop": round(kop, 2), "pulsar": used.get("pulsar", 0.0),
            "client": used.get("client", 0.0)}  # fmt: skip


def takeover(args: argparse.Namespace) -> dict[str, Any]:
    with bench_namespaces(args.http_url, "takeover") as held:
        return _takeover(args, held)


def _takeover(args: argparse.Namespace, held: dict[str, str]) -> dict[str, Any]:
    partitions = args.takeover_partitions
    log(f"takeover: 3 instances, {partitions} partitions")
    nodes = start_nodes(3, args, "takeover", held)
    bootstrap = ",".join(node.bootstrap for node in nodes)
    topic = "takeover"
    spread_topic(bootstrap, topic, partitions, 3)
    writer = Writer(bootstrap, topic, partitions, args.takeover_rate)
    writer.start()
    cycles: list[dict[str, Any]] = []
    try:
        opened = _until("every partition opened", lambda: writer.served_since(
            list(range(partitions)), 0.0), 300)  # fmt: skip
        log(f"  all {partitions} partitions opened in {opened:.1f}s")
        for c in range(args.takeover_cycles + 1):
            graceful = c == args.takeover_cycles
            victim = c % 3
            orphaned = [p for p, leader in _leaders(bootstrap, topic).items() if leader == victim]
            errors_before = len(writer.errors)
            stopped = time.monotonic()
            if graceful:
                nodes[victim].stop()
            else:
                nodes[victim].kill9()
            took = _until(f"node {victim}'s partitions served again",
                          lambda o=orphaned, k=stopped: writer.served_since(o, k), 120)  # fmt: skip
            how = "SIGTERM" if graceful else "kill -9"
            cycles.append({"how": how, "node": victim, "partitions": len(orphaned),
                           "served_again_s": took,
                           "producer_errors": len(writer.errors) - errors_before})  # fmt: skip
            log(f"  {how} of node {victim}: {len(orphaned)} partitions served again in "
                f"{took:.2f}s; {len(writer.acked):,} acknowledged")  # fmt: skip
            nodes[victim].start()
            _until(f"node {victim} leads its share again",
                   lambda v=victim: v in _leaders(bootstrap, topic).values(), 120)  # fmt: skip
            back = [p for p, leader in _leaders(bootstrap, topic).items() if leader == victim]
            restarted = time.monotonic()
            _until(f"node {victim}'s share served",
                   lambda b=back, r=restarted: writer.served_since(b, r), 120)  # fmt: skip
    finally:
        writer.stop.set()
        writer.join(200)
    check = _check(bootstrap, topic, partitions, writer)
    drop_topic(bootstrap, topic)
    for node in nodes:
        node.stop()
    return {"partitions": partitions, "rate": args.takeover_rate, "opened_s": opened,
            "cycles": cycles, **check}  # fmt: skip


def _plot(result: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = result["scale"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    labels = [f"{r['instances']} instance{'s' if r['instances'] > 1 else ''}" for r in runs]
    width = 0.38
    xs = range(len(runs))
    left.bar([x - width / 2 for x in xs], [r["produce_mbs"] for r in runs], width, label="produce")
    left.bar([x + width / 2 for x in xs], [r["consume_mbs"] for r in runs], width, label="consume")
    left.set(xticks=list(xs), xticklabels=labels, ylabel="MB/s (aggregate)")
    left.legend(loc="upper left")
    cycles = result["takeover"]["cycles"]
    colors = ["tab:red" if c["how"] == "kill -9" else "tab:green" for c in cycles]
    right.bar(range(len(cycles)), [c["served_again_s"] for c in cycles], color=colors)
    right.axhline(10, color="grey", ls=":", lw=1)
    right.set(xticks=list(range(len(cycles))), xticklabels=[c["how"] for c in cycles],
              ylabel="a third of the partitions served again (s)")  # fmt: skip
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)


def report(result: dict[str, Any]) -> str:
    rows = [
        f"| {r['instances']} | {r['produce_rps']:,.0f} | {r['produce_mbs']:.1f} | "
        f"{r['produce_cpu']['kop']:.2f} / {r['produce_cpu']['pulsar']:.2f} / "
        f"{r['produce_cpu']['client']:.2f} | {r['consume_rps']:,.0f} | {r['consume_mbs']:.1f} | "
        f"{r['consume_cpu']['kop']:.2f} / {r['consume_cpu']['pulsar']:.2f} / "
        f"{r['consume_cpu']['client']:.2f} | {r['errors']} |"
        for r in result["scale"]
    ]
    t = result["takeover"]
    kills = [c["served_again_s"] for c in t["cycles"] if c["how"] == "kill -9"]
    term = [c for c in t["cycles"] if c["how"] == "SIGTERM"]
    first = result["scale"][0]
    return "\n".join([
        BEGIN,
        f"`python -m bench.instances` on one Pulsar standalone (2 cores): {first['records']:,} "
        f"records of 1 KiB over {first['partitions']} partitions, one librdkafka producer "
        "(acks=all) then one consumer from offset 0, against one kop instance and against "
        "three (bootstrap listing all). Cores: average cores used during the phase by kop "
        "(all instances) / Pulsar / the client.",
        "",
        "| instances | produce rec/s | MB/s | cores kop / Pulsar / client | consume rec/s | MB/s "
        "| cores kop / Pulsar / client | errors |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Takeover: three instances serving a topic of {t['partitions']:,} partitions (all "
        f"opened: {t['opened_s']:.1f} s from the first record), an idempotent producer "
        f"writing {t['rate']:,} records/s round-robin over them. Served again: from the "
        "kill (or SIGTERM) until every partition the instance led has a record "
        "acknowledged again.",
        "",
        "| | partitions | served again (s) | producer errors |",
        "|---|---|---|---|",
        *[f"| {c['how']} node {c['node']} | {c['partitions']} | {c['served_again_s']:.2f} | "
          f"{c['producer_errors']} |" for c in t["cycles"]],
        "",
        f"- kill -9: p50 {statistics.median(kills):.2f} s, max {max(kills):.2f} s"
        + (f"; SIGTERM: {term[0]['served_again_s']:.2f} s." if term else "."),
        f"- acknowledged: {t['acknowledged']:,}; producer errors: {t['errors']}; offsets out "
        f"of place: {t['offset_gaps']}; stored but not acknowledged: "
        f"{t['stored_not_acknowledged']}.",
        "",
        "![one instance against three; takeover of a third of 1,000 partitions]"
        "(images/instances.png)",
        END,
    ])  # fmt: skip


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.instances", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--takeover-partitions", type=int, default=1000)
    ap.add_argument("--takeover-rate", type=int, default=2000, help="records per second")
    ap.add_argument("--takeover-cycles", type=int, default=3, help="kill -9 cycles")
    pulsar_options(ap)
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = ap.parse_args(argv)
    if pulsar_missing(args.http_url):
        return 2
    result: dict[str, Any] = {
        "scale": [scale_run(n, args) for n in (1, 3)],
        "takeover": takeover(args),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "instances.json").write_text(json.dumps(result, indent=1))
    _plot(result)
    text = report(result)
    print(text)
    if args.write:
        write_doc_section(DOC, text, BEGIN, END, "## Several instances: 1 against 3, takeover")
    t = result["takeover"]
    bad = (
        t["offset_gaps"]
        or t["stored_not_acknowledged"]
        or any(r["errors"] for r in result["scale"])
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
