"""kill -9 cycles under three kop instances (`python -m bench.failover`).

Three kop processes (node ids 0-2) on the shared Pulsar serve one topic; an idempotent
librdkafka producer (acks=all) writes round-robin to its partitions through all
three. Each cycle kills one instance with SIGKILL (in turn), measures how long until
every partition it led has a record acknowledged again (the failover as a client
sees it: the TTL, the new owner taking the partition, the client's metadata
refresh), then starts the instance again and waits until it leads its share and
serves it. At the end the log must hold exactly what was acknowledged: every
partition's offsets dense from 0 and its end equal to the acknowledged count
(nothing lost, nothing stored twice).

A line per cycle on stderr; the report (markdown) on stdout, the figures in
bench/results/failover.json, a plot in docs/images/failover.png, and with --write
the section in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import log, pulsar_missing, pulsar_options, write_doc_section
from bench.kop_process import KopProcess
from bench.namespaces import bench_namespaces

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
PLOT = REPO / "docs" / "images" / "failover.png"
BEGIN, END = "<!-- failover:begin -->", "<!-- failover:end -->"
NODES = 3


class Writer(threading.Thread):
    """The idempotent producer, and for every partition when a record was last
    acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: int) -> None:
        super().__init__(daemon=True)
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.acked: dict[tuple[int, int], bytes] = {}
        self.errors: list[str] = []
        self.last_ack = [0.0] * partitions
        self.stop = threading.Event()
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
             "linger.ms": 5, "message.timeout.ms": 180000}
        )  # fmt: skip

    def _done(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))
            return
        self.acked[(msg.partition(), msg.offset())] = msg.value()
        self.last_ack[msg.partition()] = time.monotonic()

    def run(self) -> None:
        i, t0 = 0, time.monotonic()
        while not self.stop.is_set():
            self._producer.produce(
                self.topic, value=b"r%d" % i, partition=i % self.partitions, on_delivery=self._done
            )
            i += 1
            self._producer.poll(max(0.0, t0 + i / self.rate - time.monotonic()))
        self._producer.flush(180)

    def served_since(self, partitions: list[int], since: float) -> bool:
        return all(self.last_ack[p] > since for p in partitions)


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=15)
    return {p: part.leader for p, part in md.topics[topic].partitions.items()}


def _until(what: str, check: Any, within: float) -> float:
    """Seconds until `check()` holds; raises after `within`."""
    start = time.monotonic()
    while time.monotonic() - start < within:
        try:
            if check():
                return time.monotonic() - start
        except Exception:  # a node that just started may refuse a moment
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what}: not within {within:g}s")


def run_cycles(args: argparse.Namespace) -> dict[str, Any]:
    with bench_namespaces(args.http_url, "failover") as held:
        return _run_cycles(args, held)


def _run_cycles(args: argparse.Namespace, held: dict[str, str]) -> dict[str, Any]:
    env = {
        **held,
        "KOP_OFFSETS_TOPIC_PARTITIONS": "4",
        "KOP_CLUSTER_SECRET": f"bench-secret-{uuid.uuid4().hex[:8]}",
    }
    logs = RESULTS / "failover-logs"
    nodes = [
        KopProcess(logs / f"kop-{i}.log", pulsar_url=args.pulsar_url, http_url=args.http_url,
                   env={**env, "KOP_NODE_ID": str(i)})
        for i in range(NODES)
    ]  # fmt: skip
    for node in nodes:
        node.start()
    bootstrap = ",".join(n.bootstrap for n in nodes)
    topic = "failover"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, args.partitions)])[topic].result(30)
    _until(
        "leaders on all three", lambda: set(_leaders(bootstrap, topic).values()) == {0, 1, 2}, 60
    )
    writer = Writer(bootstrap, topic, args.partitions, args.rate)
    writer.start()
    cycles: list[dict[str, Any]] = []
    try:
        for c in range(args.cycles):
            victim = c % NODES
            before = _leaders(bootstrap, topic)
            orphaned = [p for p, leader in before.items() if leader == victim]
            nodes[victim].kill9()
            killed = time.monotonic()
            took = _until(
                f"cycle {c + 1}: partitions of node {victim} served again",
                lambda o=orphaned, k=killed: writer.served_since(o, k), args.bound_s * 6,
            )  # fmt: skip
            nodes[victim].start()
            restarted = time.monotonic()
            _until(f"cycle {c + 1}: node {victim} leads its share again",
                   lambda v=victim: v in _leaders(bootstrap, topic).values(), 60)  # fmt: skip
            back = [p for p, leader in _leaders(bootstrap, topic).items() if leader == victim]
            _until(f"cycle {c + 1}: node {victim}'s share served",
                   lambda b=back, r=restarted: writer.served_since(b, r), 60)  # fmt: skip
            cycles.append({"node": victim, "partitions": len(orphaned), "failover_s": took})
            log(
                f"  cycle {c + 1:>3}/{args.cycles}: node {victim} killed, {len(orphaned)} "
                f"partitions served again in {took:5.2f}s; {len(writer.acked):,} acknowledged"
            )
    finally:
        writer.stop.set()
        writer.join(200)
    check = _check(bootstrap, topic, args.partitions, writer)
    for node in nodes:
        node.stop()
    return {"partitions": args.partitions, "rate": args.rate, "cycles": cycles, **check}


def _check(bootstrap: str, topic: str, partitions: int, writer: Writer) -> dict[str, Any]:
    """What the log holds against what was acknowledged."""
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{uuid.uuid4().hex[:6]}"})
    gaps = extra = 0
    try:
        for p in range(partitions):
            offsets = sorted(o for (q, o) in writer.acked if q == p)
            gaps += sum(1 for i, o in enumerate(offsets) if o != i)
            _low, high = probe.get_watermark_offsets(TopicPartition(topic, p), 30)
            extra += high - len(offsets)
    finally:
        probe.close()
    return {
        "acknowledged": len(writer.acked),
        "errors": len(writer.errors),
        "offset_gaps": gaps,
        "stored_not_acknowledged": extra,
    }


def _plot(result: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = [c["failover_s"] for c in result["cycles"]]
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.plot(range(1, len(times) + 1), times, "o-", ms=3, lw=1)
    ax.axhline(statistics.median(times), color="grey", ls="--", lw=1, label="p50")
    ax.axhline(10, color="red", ls=":", lw=1, label="bound (10 s)")
    ax.set(xlabel="kill -9 cycle", ylabel="served again after (s)", ylim=(0, max(11, *times)))
    ax.legend(loc="upper right")
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)


def report(result: dict[str, Any]) -> str:
    times = sorted(c["failover_s"] for c in result["cycles"])
    q = statistics.quantiles(times, n=10, method="inclusive") if len(times) > 1 else times * 9
    return "\n".join(
        [
            BEGIN,
            f"{len(times)} cycles of kill -9 against three kop instances on one Pulsar standalone "
            f"(2 cores), an idempotent producer writing {result['rate']} records/s round-robin "
            f"over "
            f"{result['partitions']} partitions through all three (`python -m bench.failover`). "
            "Served again: from the kill until every partition the killed instance led has a "
            "record acknowledged again (TTL 4 s, the new owner taking the partition, the "
            "client's metadata refresh).",
            "",
            "| served again | min | p50 | p90 | max |",
            "|---|---|---|---|---|",
            f"| seconds | {times[0]:.2f} | {statistics.median(times):.2f} | {q[8]:.2f} | "
            f"{times[-1]:.2f} |",
            "",
            f"- acknowledged: {result['acknowledged']:,}; producer errors: {result['errors']}; "
            f"offsets out of place: {result['offset_gaps']}; stored but not acknowledged: "
            f"{result['stored_not_acknowledged']}.",
            "",
            "![failover per cycle](images/failover.png)",
            END,
        ]
    )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.failover", description=__doc__)
    ap.add_argument("--cycles", type=int, default=50)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--rate", type=int, default=300, help="records per second")
    ap.add_argument("--bound-s", type=float, default=10.0)
    pulsar_options(ap)
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = ap.parse_args(argv)
    if pulsar_missing(args.http_url):
        return 2
    result = run_cycles(args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "failover.json").write_text(json.dumps(result, indent=1))
    _plot(result)
    text = report(result)
    print(text)
    if args.write:
        write_doc_section(DOC, text, BEGIN, END, "## Failover: kill -9 cycles")
    bad = result["errors"] or result["offset_gaps"] or result["stored_not_acknowledged"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
