"""What a request costs kop, compared between two commits (`python -m bench.cost`).

The quick bench's CPU column moves by about 10% between identical runs on a 2-core
machine: Pulsar, the clients and kop share both cores. That is more than most single
changes to the request path move it. This measures only kop's CPU. kop runs on a core
of its own (`taskset`); this process, its clients and (by the scheduler's choice)
Pulsar use the other. The commits compared take turns, round by round:

- **produce**: `--requests` records of `--bytes`, sent one at a time (confluent-kafka,
  `linger.ms=0`, `acks=all`): kop's CPU per request, and the latency;
- **consume**: `--records` records produced in batches of up to `--batch-bytes`, then
  read from offset 0 `--reads` times (librdkafka's defaults): kop's CPU per MB read.

`--against REV` runs commit REV (in a git worktree, removed afterwards) against the
working tree; without it, only the working tree is measured. Both entry formats are
measured unless `--formats` says otherwise. The report (markdown) goes to stdout and
the figures to bench/results/cost.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from bench import kafka_side
from bench.common import head_commit, log, proc_ticks
from bench.kop_process import REPO, KopProcess
from bench.namespaces import bench_namespaces

RESULTS = REPO / "bench" / "results" / "cost.json"
HZ = os.sysconf("SC_CLK_TCK")
KOP_CPU, CLIENT_CPU = 1, 0
WARM_UP = 200


def _produce_cost(
    bootstrap: str, topic: str, requests: int, value: bytes, pid: int
) -> dict[str, float]:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    for i in range(WARM_UP):
        p.produce(topic, value, b"k%015d" % i, partition=0)
        p.flush(30)
    ms: list[float] = []
    before = proc_ticks(pid) or 0
    for i in range(requests):
        start = time.perf_counter()
        p.produce(topic, value, b"k%015d" % i, partition=0)
        p.flush(30)
        ms.append((time.perf_counter() - start) * 1000)
    used = (proc_ticks(pid) or 0) - before
    ms.sort()
    return {
        "us_per_request": round(used / HZ / requests * 1e6, 1),
        "p50_ms": round(ms[len(ms) // 2], 3),
        "p99_ms": round(ms[int(len(ms) * 0.99)], 3),
    }


def _consume_cost(
    bootstrap: str, topic: str, records: int, value: bytes, batch_bytes: int, reads: int, pid: int
) -> list[float]:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": batch_bytes,
                  "queue.buffering.max.kbytes": 1 << 20})  # fmt: skip
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, b"k%015d" % i, partition=0)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    if p.flush(120):
        raise RuntimeError("records still unacknowledged after 120 s")
    out = []
    for n in range(reads):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"cost-{n}",
                      "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})  # fmt: skip
        c.assign([TopicPartition(topic, 0, 0)])
        got, size = 0, 0
        before, start = proc_ticks(pid) or 0, time.monotonic()
        while got < records and time.monotonic() - start < 120:
            for m in c.consume(10_000, 1.0):
                if m.error() is None:
                    got += 1
                    size += len(m.value() or b"") + len(m.key() or b"")
        used = (proc_ticks(pid) or 0) - before
        c.close()
        if got < records:
            raise RuntimeError(f"read {got} of {records} records in 120 s")
        out.append(round(used / HZ / (size / 1e6) * 1000, 3))
    return out


def _one(checkout: Path, fmt: str, args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    value = os.urandom(args.bytes)
    with bench_namespaces(args.http_url, "cost") as env:
        kop = KopProcess(
            logs / f"kop-{fmt}.log", pulsar_url=args.pulsar_url, http_url=args.http_url,
            checkout=checkout, env=env, cpu=KOP_CPU,
        )  # fmt: skip
        with kop:
            produced, consumed = f"cost-p-{uuid.uuid4().hex[:8]}", f"cost-c-{uuid.uuid4().hex[:8]}"
            kafka_side.create_topics(kop.bootstrap, {produced: fmt, consumed: fmt})
            result: dict[str, Any] = _produce_cost(
                kop.bootstrap, produced, args.requests, value, kop.pid
            )
            result["ms_per_mb_read"] = _consume_cost(
                kop.bootstrap, consumed, args.records, value, args.batch_bytes, args.reads, kop.pid
            )
            kafka_side.delete_topics(kop.bootstrap, [produced, consumed])
    return result


@contextlib.contextmanager
def _worktree(rev: str | None) -> Iterator[Path | None]:
    if rev is None:
        yield None
        return
    where = Path(tempfile.mkdtemp(prefix="kop-cost-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), rev],
                   check=True, capture_output=True)  # fmt: skip
    try:
        yield where
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
                       check=False, capture_output=True)  # fmt: skip


def _report(runs: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    lines = [
        "| commit | format | kop CPU per produce (us), per round | p50 / p99 ms (median) "
        "| kop CPU per MB read (ms), per round |",
        "|---|---|---|---|---|",
    ]
    for label, by_format in runs.items():
        for fmt, rounds in by_format.items():
            cpu = " / ".join(f"{r['us_per_request']:.0f}" for r in rounds)
            p50 = statistics.median(r["p50_ms"] for r in rounds)
            p99 = statistics.median(r["p99_ms"] for r in rounds)
            read = " / ".join(f"{min(r['ms_per_mb_read']):.2f}" for r in rounds)
            lines.append(f"| {label} | `{fmt}` | {cpu} | {p50:.2f} / {p99:.2f} | {read} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cost", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--against", help="a commit to compare the working tree with")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--formats", default="kafka,pulsar")
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--batch-bytes", type=int, default=16384)
    ap.add_argument("--reads", type=int, default=3)
    ap.add_argument("--bytes", type=int, default=1024)
    ap.add_argument("--pulsar-url", default="pulsar://localhost:6650")
    ap.add_argument("--http-url", default="http://localhost:8080")
    args = ap.parse_args(argv)
    if (os.cpu_count() or 1) < 2:
        ap.error("needs two cores: kop on one, everything else on the other")
    os.sched_setaffinity(0, {CLIENT_CPU})
    logs = Path(tempfile.mkdtemp(prefix="kop-cost-logs-"))
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with _worktree(args.against) as other:
        checkouts = [(f"{args.against} (--against)", other)] if other is not None else []
        checkouts.append((f"{head_commit()} (working tree)", REPO))
        for n in range(args.rounds):
            for fmt in args.formats.split(","):
                for label, checkout in checkouts:
                    log(f"round {n + 1}/{args.rounds}: {label}, `{fmt}` format")
                    result = _one(checkout, fmt, args, logs)
                    log(f"  {result}")
                    runs.setdefault(label, {}).setdefault(fmt, []).append(result)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"args": vars(args), "runs": runs}, indent=2) + "\n")
    print(_report(runs))
    log(f"wrote {RESULTS.relative_to(REPO)} (kop logs in {logs})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
