"""How long a group of Java consumers takes to settle, classic protocol against KIP-848's
consumer protocol, kop beside the reference Kafka (`python -m bench.rebalance`).

On each target, per protocol and round: a topic of `--partitions` partitions and a
fresh group; kafka-clients 4.3.1 consumers in one JVM (bench/java/RebalanceTimer.java):
`--members - 1` subscribe at once (start), one more joins (joins), one leaves (leaves).
Each phase is timed from its cause until every partition is held by exactly one member
and every member holds one, unchanged for a second. The classic protocol runs the Java
consumer's default assignors (range, eager: everyone gives everything up on every
rebalance); the consumer protocol the broker's default (uniform, incremental). Both
brokers keep Kafka's default `group.initial.rebalance.delay.ms` of 3 s, which the first
classic join waits out. Medians of `--rounds` rounds; the report on stdout, the figures in
bench/results/rebalance.json, a plot in docs/images/rebalance.png, and with --write in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench.common import head_commit, log, publish, pulsar_missing, pulsar_options
from bench.kop_process import KopProcess
from bench.namespaces import bench_namespaces
from bench.refkafka import KAFKA_TOOL, RefKafka, bootstrap

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
PLOT = REPO / "docs" / "images" / "rebalance.png"
SOURCE = REPO / "bench" / "java" / "RebalanceTimer.java"
BEGIN, END = "<!-- rebalance:begin -->", "<!-- rebalance:end -->"
PHASES = ("start", "joins", "leaves")
PROTOCOLS = ("classic", "consumer")
TIMEOUT_S = 120


def _kafka_lib() -> Path:
    cache = Path(os.environ.get("KOP_CACHE_DIR") or "~/.cache/kop").expanduser()
    version = "4.3.1"
    lib = cache / f"kafka-{version}" / "lib"
    if not (lib / f"kafka-clients-{version}.jar").exists():
        subprocess.run([sys.executable, str(KAFKA_TOOL), "fetch"], check=True)
    return lib


def _topics(bs: str, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, str(KAFKA_TOOL), "tool", "topics", "--bootstrap-server", bs, *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"kafka-topics {' '.join(args)}: {done.stdout}{done.stderr}")


def one_round(bs: str, partitions: int, members: int, protocol: str) -> dict[str, float | None]:
    """Each phase's milliseconds (None: not settled within TIMEOUT_S)."""
    topic = f"bench-rebalance-{uuid.uuid4().hex[:8]}"
    _topics(bs, "--create", "--topic", topic, "--partitions", str(partitions))
    try:
        done = subprocess.run(
            ["java", "-Xmx512m", "-cp", f"{_kafka_lib()}/*", str(SOURCE), bs, topic,
             str(partitions), str(members), protocol, str(TIMEOUT_S)],
            capture_output=True, text=True, timeout=TIMEOUT_S * 4,
        )  # fmt: skip
    finally:
        _topics(bs, "--delete", "--topic", topic)
    out: dict[str, float | None] = {}
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "PHASE":
            out[parts[1]] = None if parts[3] == "TIMEOUT" else float(parts[3])
    if "END" not in done.stdout or set(out) != set(PHASES):
        raise RuntimeError(
            f"RebalanceTimer ({protocol}) failed:\n{done.stdout}\n{done.stderr[-3000:]}"
        )
    return out


def measure(
    target: str, bs: str, partitions: int, members: int, rounds: int
) -> dict[str, dict[str, float | None]]:
    """protocol -> phase -> median milliseconds over the rounds (None if any timed out)."""
    runs: dict[str, list[dict[str, float | None]]] = {p: [] for p in PROTOCOLS}
    for r in range(rounds):
        for protocol in PROTOCOLS:  # interleaved: a slow minute of the machine hits both
            got = one_round(bs, partitions, members, protocol)
            runs[protocol].append(got)
            log(f"  {target} {protocol} round {r + 1}: "
                + ", ".join(f"{k} {_ms(v)}" for k, v in got.items()))  # fmt: skip
    out: dict[str, dict[str, float | None]] = {}
    for protocol, rounds_of in runs.items():
        out[protocol] = {}
        for phase in PHASES:
            values = [g[phase] for g in rounds_of]
            kept = [v for v in values if v is not None]
            out[protocol][phase] = statistics.median(kept) if len(kept) == len(values) else None
    return out


def _ms(v: float | None) -> str:
    return "timeout" if v is None else f"{v / 1000:.2f} s"


Results = dict[str, dict[str, dict[str, float | None]]]  # target -> protocol -> phase -> ms


def report(results: Results, args: argparse.Namespace, commit: str) -> str:
    lines = [
        BEGIN,
        f"## Rebalance time: {args.members} Java consumers, classic against KIP-848",
        "",
        f"`python -m bench.rebalance --members {args.members} --partitions {args.partitions} "
        f"--rounds {args.rounds}` at `{commit}`, {datetime.date.today()}: kafka-clients "
        f"4.3.1 consumers in one JVM on a topic of {args.partitions} partitions; "
        f"{args.members - 1} subscribe at once (start), one more joins, one leaves; each "
        "phase timed until every partition is held by exactly one member and every member "
        "holds one, unchanged for a second. Classic: the Java consumer's default assignors "
        "(range, eager); consumer: KIP-848 with the broker's default assignor (uniform). "
        "Both brokers wait Kafka's default `group.initial.rebalance.delay.ms` (3 s) on a "
        f"classic group's first join. Medians of {args.rounds} rounds on this 2-core "
        "machine, Pulsar, Kafka and the clients sharing it.",
        "",
        "| phase | protocol | Kafka 4.3.1 | kop | kop / Kafka |",
        "|---|---|---:|---:|---:|",
    ]
    for phase in PHASES:
        for protocol in PROTOCOLS:
            k, p = results["kafka"][protocol][phase], results["kop"][protocol][phase]
            ratio = f"{p / k:.2f}" if k and p is not None else "-"
            lines.append(f"| {phase} | {protocol} | {_ms(k)} | {_ms(p)} | {ratio} |")
    lines += ["", "![rebalance time](images/rebalance.png)", "", END]
    return "\n".join(lines)


def plot(results: Results) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PHASES), figsize=(9, 3.2), sharey=True)
    width = 0.38
    for ax, phase in zip(axes, PHASES, strict=True):
        for i, target in enumerate(("kafka", "kop")):
            xs = [j + (i - 0.5) * width for j in range(len(PROTOCOLS))]
            ys = [(results[target][p][phase] or 0.0) / 1000 for p in PROTOCOLS]
            ax.bar(xs, ys, width, label=target)
        ax.set_xticks(range(len(PROTOCOLS)), PROTOCOLS)
        ax.set_title(phase)
    axes[0].set_ylabel("seconds until settled")
    axes[-1].legend()
    fig.suptitle("Rebalance time of a group of Java consumers")
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.rebalance", description=__doc__)
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--targets", default="kafka,kop", help="comma list of kafka, kop")
    pulsar_options(ap)
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = ap.parse_args(argv)
    if args.members < 2 or args.partitions < args.members:
        ap.error("--members must be at least 2 and at most --partitions")
    targets = args.targets.split(",")
    if "kop" in targets and pulsar_missing(args.http_url):
        return 2
    commit = head_commit()
    results: Results = {}
    if "kafka" in targets:
        kafka = RefKafka()
        kafka.start()
        try:
            results["kafka"] = measure("kafka", bootstrap(), args.partitions, args.members,
                                       args.rounds)  # fmt: skip
        finally:
            kafka.stop()
    if "kop" in targets:
        with (
            bench_namespaces(args.http_url, "rebalance") as env,
            KopProcess(RESULTS / "rebalance-kop.log", pulsar_url=args.pulsar_url,
                       http_url=args.http_url, env=env) as kop,
        ):  # fmt: skip
            results["kop"] = measure("kop", kop.bootstrap, args.partitions, args.members,
                                     args.rounds)  # fmt: skip
    payload = {"commit": commit, "members": args.members, "partitions": args.partitions,
               "rounds": args.rounds, "at": time.time(), "results": results}  # fmt: skip
    if set(results) == {"kafka", "kop"}:
        publish(RESULTS / "rebalance.json", payload, report(results, args, commit),
                lambda: plot(results), args.write, DOC, (BEGIN, END))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
