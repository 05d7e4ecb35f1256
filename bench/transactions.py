"""Transactional produce, kop against the reference Kafka in one run:

    python -m bench.transactions [--records 200000] [--write]

Kafka's ProducerPerformance (the Java client, acks=all, 1 KiB values) against kop on
the local Pulsar and against the reference Kafka 4.3.1 (tools/kafka.py), once plain
(idempotent) and once transactional (`--transactional-id`, a commit every
`--transaction-duration-ms`). Reported: records/s and latencies per target, what the
transactions cost each (transactional / plain), and kop against Kafka as ratios;
`--write` puts the table and a plot in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import log, pulsar_missing, pulsar_options, write_doc_section
from bench.kop_process import REPO, KopProcess
from bench.refkafka import PerfResult, RefKafka, kafka_version, producer_perf
from bench.refkafka import bootstrap as kafka_bootstrap

RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
PLOT = REPO / "docs" / "images" / "transactions.png"
BEGIN, END = "<!-- transactions:begin -->", "<!-- transactions:end -->"


def _topic(bootstrap: str, partitions: int) -> str:
    name = f"bench-txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(60)
    return name


def _runs(bootstrap: str, target: str, args: argparse.Namespace) -> dict[str, PerfResult]:
    out = {}
    for kind in ("plain", "transactional"):
        extra: tuple[str, ...] = ()
        if kind == "transactional":
            extra = ("--transactional-id", f"bench-{uuid.uuid4().hex[:8]}",
                     "--transaction-duration-ms", str(args.transaction_ms))  # fmt: skip
        log(f"{target}: {kind} produce of {args.records:,} records")
        out[kind] = producer_perf(
            bootstrap, _topic(bootstrap, args.partitions), args.records, args.records // 5,
            args.value_bytes, 5, 64 * 1024, f"{target} {kind}", 900, extra,
        )  # fmt: skip
    return out


def _rate(r: PerfResult) -> float:
    return r.records / r.seconds if r.seconds else 0.0


def report(result: dict[str, Any], args: argparse.Namespace) -> str:
    rows = []
    for target in ("kop", "kafka"):
        for kind in ("plain", "transactional"):
            r = result[target][kind]
            rows.append(f"| {target} | {kind} | {r['rate']:,.0f} | {r['avg_ms']:.1f} | "
                        f"{r['p99_ms']:.0f} | {r['errors']} |")  # fmt: skip
    cost = {t: result[t]["transactional"]["rate"] / max(1.0, result[t]["plain"]["rate"])
            for t in ("kop", "kafka")}  # fmt: skip
    ratio = {k: result["kop"][k]["rate"] / max(1.0, result["kafka"][k]["rate"])
             for k in ("plain", "transactional")}  # fmt: skip
    return "\n".join([
        BEGIN,
        f"`python -m bench.transactions`: Kafka's ProducerPerformance (Java client, acks=all, "
        f"{args.value_bytes:,}-byte values, {args.partitions} partitions, {args.records:,} "
        f"records, steady state after the first fifth) against kop on a Pulsar standalone and "
        f"against Kafka {kafka_version()}, on the same 2 cores; transactional: a commit every "
        f"{args.transaction_ms} ms.",
        "",
        "| target | produce | records/s | avg ms | p99 ms | errors |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"- transactional / plain: kop {cost['kop']:.2f}, Kafka {cost['kafka']:.2f}",
        f"- kop / Kafka: plain {ratio['plain']:.2f}, transactional {ratio['transactional']:.2f}",
        "",
        "![transactional produce, kop against Kafka](images/transactions.png)",
        END,
    ])  # fmt: skip


def _plot(result: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    kinds, width = ("plain", "transactional"), 0.38
    for i, target in enumerate(("kop", "kafka")):
        xs = [k + (i - 0.5) * width for k in range(len(kinds))]
        ax.bar(xs, [result[target][k]["rate"] for k in kinds], width, label=target)
    ax.set(xticks=list(range(len(kinds))), xticklabels=kinds, ylabel="records/s")
    ax.legend()
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.transactions", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--value-bytes", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--transaction-ms", type=int, default=100)
    pulsar_options(ap)
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = ap.parse_args(argv)
    if pulsar_missing(args.http_url):
        return 2
    kop = KopProcess(RESULTS / "transactions-kop.log", pulsar_url=args.pulsar_url,
                     http_url=args.http_url)  # fmt: skip
    kafka = RefKafka()
    result: dict[str, Any] = {}
    kop.start()
    try:
        runs = {"kop": _runs(kop.bootstrap, "kop", args)}
    finally:
        kop.stop()
    kafka.start()
    try:
        runs["kafka"] = _runs(kafka_bootstrap(), "kafka", args)
    finally:
        kafka.stop()
    for target, by_kind in runs.items():
        result[target] = {
            kind: {"rate": _rate(r), "avg_ms": r.stats.get("avg_ms", 0.0),
                   "p99_ms": r.stats.get("p99_ms", 0.0), "errors": r.errors, "note": r.note}
            for kind, r in by_kind.items()
        }  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "transactions.json").write_text(json.dumps(result, indent=1))
    _plot(result)
    text = report(result, args)
    print(text)
    if args.write:
        write_doc_section(DOC, text, BEGIN, END, "## Transactions: transactional produce")
    return 1 if any(r["errors"] for t in result.values() for r in t.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
