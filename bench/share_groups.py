"""Share-group throughput, kop beside the reference Kafka (`python -m bench.share_groups`).

On each target: a topic of 4 partitions filled with `--records` records of 100 bytes by
Kafka's ProducerPerformance; then Kafka's own ShareConsumerPerformance reads them all in
a share group (implicit acknowledgement: every record acquired is accepted), with 1 and
with 2 share consumers; and, for scale, ConsumerPerformance reads them in a classic
consumer group. A share group starts at the log's start here: on Kafka through the group
config `share.auto.offset.reset=earliest`, on kop through `share_auto_offset_reset`.

Records acknowledged per second, as the tool reports them (nMsg.sec: from the first
fetch to the last record, the group's join included). The report on stdout, the figures
in bench/results/share_groups.json, a plot in docs/images/, and with --write in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench.common import head_commit, log, publish, pulsar_missing, pulsar_options
from bench.kop_process import KopProcess
from bench.namespaces import bench_namespaces
from bench.refkafka import KAFKA_TOOL, RefKafka, _run, bootstrap, consumer_perf, producer_perf

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
PLOT = REPO / "docs" / "images" / "share_groups.png"
BEGIN, END = "<!-- share-groups:begin -->", "<!-- share-groups:end -->"
PARTITIONS = 4


def _create(bs: str, topic: str) -> None:
    done = subprocess.run(
        [sys.executable, str(KAFKA_TOOL), "tool", "topics", "--bootstrap-server", bs, "--create",
         "--topic", topic, "--partitions", str(PARTITIONS)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"creating {topic}: {done.stdout}{done.stderr}")


def _earliest_on_kafka(bs: str, group: str) -> None:
    """Kafka's group config (kop has no per-group configs yet: its setting does this)."""
    subprocess.run(
        [sys.executable, str(KAFKA_TOOL), "tool", "configs", "--bootstrap-server", bs, "--alter",
         "--entity-type", "groups", "--entity-name", group,
         "--add-config", "share.auto.offset.reset=earliest"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip


def share_perf(bs: str, topic: str, group: str, records: int, threads: int) -> float:
    """ShareConsumerPerformance's nMsg.sec for `records` records (0.0 if it failed)."""
    args = [
        "org.apache.kafka.tools.ShareConsumerPerformance", "--bootstrap-server", bs,
        "--topic", topic, "--group", group, "--num-records", str(records),
        "--threads", str(threads), "--timeout", "30000",
    ]  # fmt: skip
    rc, lines = _run(args, f"share x{threads}", 600)
    for i, line in enumerate(lines[:-1]):
        if line.startswith("start.time,"):
            row = dict(zip([h.strip() for h in line.split(",")],
                           [v.strip() for v in lines[i + 1].split(",")], strict=False))  # fmt: skip
            if rc == 0 and int(float(row.get("data.consumed.in.nMsg", 0))) >= records:
                return float(row["nMsg.sec"])
    log(f"  share consumer x{threads} failed (exit {rc}): {lines[-3:]}")
    return 0.0


def measure(target: str, bs: str, records: int) -> dict[str, float]:
    topic = f"bench-share-{uuid.uuid4().hex[:8]}"
    _create(bs, topic)
    log(f"{target}: filling {topic} with {records:,} records")
    producer_perf(bs, topic, records, 0, 100, 5, 65536, f"{target} fill", 600)
    out: dict[str, float] = {}
    for threads in (1, 2):
        group = f"bench-share-{threads}-{uuid.uuid4().hex[:6]}"
        if target == "kafka":
            _earliest_on_kafka(bs, group)
        out[f"share group, {threads} consumer{'s' if threads > 1 else ''}"] = share_perf(
            bs, topic, group, records, threads
        )
        log(f"  {target} share x{threads}: {out[list(out)[-1]]:,.0f} records/s")
    classic = consumer_perf(bs, topic, records, f"{target} consumer group", 600)
    out["consumer group (classic), 1 consumer"] = (
        classic.records / classic.seconds if classic.seconds else 0.0
    )
    subprocess.run(  # a run leaves nothing behind
        [sys.executable, str(KAFKA_TOOL), "tool", "topics", "--bootstrap-server", bs, "--delete",
         "--topic", topic],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return out


def report(results: dict[str, dict[str, float]], records: int, commit: str) -> str:
    rows = list(next(iter(results.values())))
    lines = [
        BEGIN,
        "## Share groups (KIP-932): records acknowledged per second",
        "",
        f"`python -m bench.share_groups --records {records}` at `{commit}`, "
        f"{datetime.date.today()}: a topic of {PARTITIONS} partitions, {records:,} records "
        "of 100 bytes, read by Kafka 4.3.1's ShareConsumerPerformance (implicit "
        "acknowledgement) and, for scale, ConsumerPerformance; one run on this 2-core "
        "machine, Pulsar, Kafka and the clients sharing it. The share rates count from the "
        "tool's start, the group's join included (ConsumerPerformance's, fetching only), "
        "so they rise with `--records` on both "
        "sides; the ratio is the figure to read. On Kafka each acknowledgement also goes "
        "to the share coordinator's state topic; on kop it is Pulsar's acknowledgement of "
        "the entry (D27).",
        "",
        "| reader | Kafka 4.3.1 | kop | kop / Kafka |",
        "|---|---:|---:|---:|",
    ]
    for row in rows:
        k, p = results["kafka"][row], results["kop"][row]
        ratio = f"{p / k:.2f}" if k else "-"
        lines.append(f"| {row} | {k:,.0f} | {p:,.0f} | {ratio} |")
    lines += ["", "![share groups](images/share_groups.png)", "", END]
    return "\n".join(lines)


def plot(results: dict[str, dict[str, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(next(iter(results.values())))
    fig, ax = plt.subplots(figsize=(8, 3.2))
    width = 0.38
    for i, target in enumerate(("kafka", "kop")):
        xs = [j + (i - 0.5) * width for j in range(len(rows))]
        ax.bar(xs, [results[target][r] for r in rows], width, label=target)
    ax.set_xticks(range(len(rows)), [r.replace(", ", "\n") for r in rows], fontsize=8)
    ax.set_ylabel("records/s")
    ax.set_title("Share groups: records acknowledged per second")
    ax.legend()
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.share_groups", description=__doc__)
    ap.add_argument("--records", type=int, default=200_000)
    pulsar_options(ap)
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = ap.parse_args(argv)
    if pulsar_missing(args.http_url):
        return 2
    commit = head_commit()
    results: dict[str, dict[str, float]] = {}
    kafka = RefKafka()
    kafka.start()
    try:
        results["kafka"] = measure("kafka", bootstrap(), args.records)
    finally:
        kafka.stop()
    with (
        bench_namespaces(args.http_url, "share-groups") as env,
        KopProcess(RESULTS / "share_groups-kop.log", pulsar_url=args.pulsar_url,
                   http_url=args.http_url, env={**env, "KOP_SHARE_AUTO_OFFSET_RESET": "earliest"})
        as kop,
    ):  # fmt: skip
        results["kop"] = measure("kop", kop.bootstrap, args.records)
    payload = {"commit": commit, "records": args.records, "at": time.time(), "results": results}
    section = report(results, args.records, commit)
    publish(RESULTS / "share_groups.json", payload, section, lambda: plot(results), args.write,
            DOC, (BEGIN, END))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
