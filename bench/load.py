"""Scale: many clients at a steady offered load for minutes (`python -m bench.load`).

For 1 and then 3 kop instances on the shared Pulsar (each run a namespace of its own):
`--topics` topics of `--partitions` partitions, `--producers` producers and
`--consumers` consumers in `--groups` groups, every one a franz-go client of its own
(bench/go/load, built once per source hash), at `--rate` records/s of `--bytes` bytes
for `--minutes`.
Every `--every` seconds: the clients' records sent, acknowledged and failed, produce
latency p50/p99, end-to-end p99, partition assignments after the group settled (a
rebalance storm), and kop's CPU, RSS and event-loop lag (kop_event_loop_lag_seconds,
scraped from each instance's /metrics).

With `--ramp R1,R2,...` one instance is driven at each rate in turn for `--step-s`
seconds instead: the first rate at which kop no longer keeps up (acknowledged below 95%
of offered, a failure, or p99 produce latency above a second) names the limit.

Progress on stderr; the report (markdown) on stdout, the figures in
bench/results/load.json, a plot in docs/images/load.png, and with --write the section in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import (
    find_pulsar_pid,
    head_commit,
    log,
    proc_ticks,
    publish,
    pulsar_missing,
    pulsar_options,
    rss_mib,
)
from bench.kop_process import KopProcess, free_port
from bench.namespaces import bench_namespaces

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
PLOT = REPO / "docs" / "images" / "load.png"
SOURCE = REPO / "bench" / "go" / "load"
BEGIN, END = "<!-- load:begin -->", "<!-- load:end -->"
_TICK = 100  # clock ticks per second in /proc/<pid>/stat
_LAG_BUCKET = re.compile(r'^kop_event_loop_lag_seconds_bucket\{le="([^"]+)"\} ([0-9.e+]+)$')


class Instance:
    """One kop of the run, with its admin HTTP for /metrics."""

    def __init__(self, i: int, label: str, args: argparse.Namespace, env: dict[str, str]) -> None:
        self.admin_port = free_port()
        self.kop = KopProcess(
            RESULTS / "load-logs" / f"{label}-{i}.log", pulsar_url=args.pulsar_url,
            http_url=args.http_url, extra_args=["--admin-port", str(self.admin_port)],
            env={**env, "KOP_NODE_ID": str(i)},
        )  # fmt: skip
        self._lag_before: dict[float, float] = {}

    def lag_p99_ms(self) -> float:
        """The p99 of the loop-lag observations since the last call (a bucket's bound)."""
        try:
            url = f"http://127.0.0.1:{self.admin_port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as resp:
                text = resp.read().decode()
        except OSError:
            return float("nan")
        now: dict[float, float] = {}
        for line in text.splitlines():
            m = _LAG_BUCKET.match(line)
            if m:
                now[float(m.group(1))] = float(m.group(2))
        delta = {le: c - self._lag_before.get(le, 0.0) for le, c in sorted(now.items())}
        self._lag_before = now
        total = delta.get(float("inf"), 0.0)
        if total <= 0:
            return 0.0
        for le, count in delta.items():
            if count >= 0.99 * total:
                return le * 1000 if le != float("inf") else 5000.0
        return 5000.0


def create_topics(bootstrap: str, prefix: str, topics: int, partitions: int) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"{prefix}-{i:03d}" for i in range(topics)]
    for fut in admin.create_topics([NewTopic(n, partitions) for n in names]).values():
        fut.result(120)
    log(f"  created {topics} topics of {partitions} partitions")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=20).topics
        if all(n in md and len(md[n].partitions) == partitions for n in names):
            return names
        time.sleep(1)
    raise TimeoutError("topics not visible in metadata")


def drop_topics(bootstrap: str, names: list[str]) -> None:
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for fut in admin.delete_topics(names).values():
            fut.result(120)
    except Exception as exc:  # the figures stand; say what is left
        log(f"  could not delete every topic: {exc}")


class Sampler(threading.Thread):
    """kop's and Pulsar's CPU, kop's RSS and loop lag, every `every` seconds."""

    def __init__(self, instances: list[Instance], every: float) -> None:
        super().__init__(daemon=True)
        self.instances, self.every = instances, every
        self.rows: list[dict[str, float]] = []
        self.stop = threading.Event()
        self.pulsar = find_pulsar_pid() or 0

    def _reading(self, pids: list[int]) -> tuple[float, list[int], int]:
        """Now, each kop's CPU ticks and Pulsar's."""
        return (time.monotonic(), [proc_ticks(p) or 0 for p in pids],
                proc_ticks(self.pulsar) or 0)  # fmt: skip

    def run(self) -> None:
        pids = [i.kop.pid for i in self.instances]
        last = (
            time.monotonic(),
            [(proc_ticks(p) or 0) for p in pids],
            (proc_ticks(self.pulsar) or 0),
        )
        for inst in self.instances:
            inst.lag_p99_ms()  # the baseline
        start = last[0]
        while not self.stop.wait(self.every - (time.monotonic() - start) % self.every):
            now = (
                time.monotonic(),
                [(proc_ticks(p) or 0) for p in pids],
                (proc_ticks(self.pulsar) or 0),
            )
            wall = now[0] - last[0]
            kop_cores = sum(b - a for a, b in zip(last[1], now[1], strict=True)) / _TICK / wall
            self.rows.append({
                "t": round(now[0] - start, 1),
                "kop_cores": round(kop_cores, 3),
                "pulsar_cores": round((now[2] - last[2]) / _TICK / wall, 3),
                "kop_rss_mb": round(sum(rss_mib(p) for p in pids), 1),
                "lag_p99_ms": max(i.lag_p99_ms() for i in self.instances),
            })  # fmt: skip
            last = now


def load_clients() -> Path:
    """The Go load generator, built when its sources changed (`go build`, modules from
    the Go module proxy, as the conformance drivers are)."""
    h = hashlib.sha256()
    for f in sorted([*SOURCE.glob("go.*"), *SOURCE.glob("*.go")]):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    cache = Path(os.environ.get("KOP_CACHE_DIR") or "~/.cache/kop").expanduser()
    exe = cache / "bench-load" / h.hexdigest()[:16] / "load"
    if exe.exists():
        return exe
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("bench.load's clients are a Go program: `go` 1.26+ is not on PATH")
    log(f"  building the load clients (go build in {SOURCE})")
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_name(".load.partial")
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-buildvcs=false"}
    subprocess.run([go, "build", "-mod=readonly", "-o", str(tmp), "."], cwd=SOURCE, env=env,
                   check=True)  # fmt: skip
    tmp.replace(exe)
    return exe


def drive(
    bootstrap: str, prefix: str, args: argparse.Namespace, rate: float, seconds: int,
    instances: list[Instance],
) -> dict[str, Any]:  # fmt: skip
    """The load clients at `rate` for `seconds`: their windows and the sampler's rows."""
    cmd = [
        str(load_clients()), bootstrap, prefix,
        str(args.topics), str(args.partitions), str(args.producers), str(args.consumers),
        str(args.groups), str(rate), str(args.bytes), str(seconds), str(args.every),
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    windows: list[dict[str, Any]] = []
    ready: dict[str, Any] = {}
    end: dict[str, Any] = {}
    sampler = Sampler(instances, args.every)
    assert proc.stdout is not None
    err_tail: list[str] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err_tail.append(line)
            del err_tail[:-40]

    threading.Thread(target=drain, daemon=True).start()
    started = time.monotonic()
    for line in proc.stdout:
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        if row.get("ready"):
            ready = row
            log(f"  ready after {time.monotonic() - started:.0f} s "
                f"({row['idle_consumers']} consumers without partitions)")  # fmt: skip
            sampler.start()
        elif row.get("end"):
            end = row
        else:
            windows.append(row)
            s = sampler.rows[-1] if sampler.rows else {}
            log(f"  t={row['t']:>4}s acked {row['acked'] / args.every:>7.0f}/s "
                f"p99 {row['p99_ms']:>7.1f} ms e2e p99 {row['e2e_p99_ms']:>7.0f} ms "
                f"failed {row['failed']} assignments {row['assignments']} "
                f"kop {s.get('kop_cores', 0):.2f} cores {s.get('kop_rss_mb', 0):.0f} MB "
                f"lag p99 {s.get('lag_p99_ms', 0):.0f} ms")  # fmt: skip
    proc.wait()
    sampler.stop.set()
    if proc.returncode != 0 or not end:
        raise RuntimeError(f"the load clients failed ({proc.returncode}):\n{''.join(err_tail)}")
    return {"rate": rate, "ready": ready, "windows": windows, "samples": sampler.rows,
            "errors": end.get("errors", {})}  # fmt: skip


# Every client of the run connects from this host: kop's per-address limits (200 open,
# 50 new a second, docs/configuration.md) refuse most of 200 clients, the first limit
# this load meets. An operator raises them for such a host (a NAT, a Connect worker).
ONE_HOST = {"KOP_MAX_CONNECTIONS_PER_IP_OVERRIDES": "127.0.0.1:1000",
            "KOP_MAX_CONNECTION_CREATION_RATE_PER_IP": "500"}  # fmt: skip


def steady(n: int, args: argparse.Namespace) -> dict[str, Any]:
    with bench_namespaces(args.http_url, f"load{n}") as env:
        log(f"{n} instance{'s' if n > 1 else ''}: {args.topics} topics x {args.partitions} "
            f"partitions, {args.producers} producers, {args.consumers} consumers, "
            f"{args.rate:.0f} records/s for {args.minutes} min")  # fmt: skip
        env = {**env, **ONE_HOST, "KOP_OFFSETS_TOPIC_PARTITIONS": "4",
               "KOP_CLUSTER_SECRET": f"bench-load-{time.time_ns()}"}  # fmt: skip
        instances = [Instance(i, f"load{n}", args, env) for i in range(n)]
        for inst in instances:
            inst.kop.start()
        bootstrap = ",".join(i.kop.bootstrap for i in instances)
        names: list[str] = []
        try:
            names = create_topics(bootstrap, "load", args.topics, args.partitions)
            run = drive(bootstrap, "load", args, args.rate, int(args.minutes * 60), instances)
        finally:
            if names:
                drop_topics(bootstrap, names)
            for inst in instances:
                inst.kop.stop()
        return {"instances": n, **run, "summary": summarize(run, args)}


def ramp(args: argparse.Namespace) -> dict[str, Any]:
    """One instance at rising rates until it no longer keeps up."""
    steps: list[dict[str, Any]] = []
    with bench_namespaces(args.http_url, "loadramp") as env:
        env = {**env, **ONE_HOST, "KOP_CLUSTER_SECRET": f"bench-ramp-{time.time_ns()}"}
        inst = Instance(0, "ramp", args, env)
        inst.kop.start()
        names: list[str] = []
        try:
            names = create_topics(inst.kop.bootstrap, "ramp", args.topics, args.partitions)
            for i, rate in enumerate(float(r) for r in args.ramp.split(",")):
                log(f"ramp: {rate:.0f} records/s for {args.step_s} s")
                run = drive(inst.kop.bootstrap, "ramp", args, rate, args.step_s, [inst])
                summary = summarize(run, args, warm_windows=1)
                steps.append({"rate": rate, **summary})
                if not summary["kept_up"]:
                    log(f"ramp: kop no longer keeps up at {rate:.0f} records/s: {summary['why']}")
                    break
                if i + 1 < len(args.ramp.split(",")):
                    time.sleep(2)
        finally:
            if names:
                drop_topics(inst.kop.bootstrap, names)
            inst.kop.stop()
    return {"steps": steps}


def summarize(
    run: dict[str, Any], args: argparse.Namespace, warm_windows: int = 0
) -> dict[str, Any]:
    w = run["windows"][warm_windows:] or run["windows"]
    s = run["samples"][warm_windows:] or run["samples"]
    secs = args.every * len(w)
    sent, acked = sum(r["sent"] for r in w), sum(r["acked"] for r in w)
    failed = sum(r["failed"] for r in run["windows"])
    p99s = sorted(r["p99_ms"] for r in w)
    out = {
        "offered_rps": round(sent / secs, 1) if secs else 0.0,
        "acked_rps": round(acked / secs, 1) if secs else 0.0,
        "failed": failed,
        "p99_ms_median": p99s[len(p99s) // 2] if p99s else 0.0,
        "p99_ms_worst": p99s[-1] if p99s else 0.0,
        "e2e_p99_ms_median": sorted(r["e2e_p99_ms"] for r in w)[len(w) // 2] if w else 0.0,
        "assignments_after_ready": sum(r["assignments"] for r in run["windows"]),
        "kop_cores_mean": round(sum(x["kop_cores"] for x in s) / len(s), 2) if s else 0.0,
        "pulsar_cores_mean": round(sum(x["pulsar_cores"] for x in s) / len(s), 2) if s else 0.0,
        "kop_rss_mb_first_last": (s[0]["kop_rss_mb"], s[-1]["kop_rss_mb"]) if s else (0, 0),
        "lag_p99_ms_worst": max((x["lag_p99_ms"] for x in s), default=0.0),
    }
    why = []
    if out["acked_rps"] < 0.95 * run["rate"]:
        why.append(f"acknowledged {out['acked_rps']:.0f}/s of {run['rate']:.0f}/s offered")
    if failed:
        why.append(f"{failed} sends failed")
    if out["p99_ms_median"] > 1000:
        why.append(f"p99 produce latency {out['p99_ms_median']:.0f} ms")
    out["kept_up"], out["why"] = not why, "; ".join(why)
    return out


def _limit(run: dict[str, Any], cores: int = os.cpu_count() or 1) -> str:
    """What held a steady run back, by what its processes took: each kop event loop
    (one core each at most), or the machine's cores (kop and Pulsar near all of them,
    the clients needing the rest)."""
    s, n = run["summary"], run["instances"]
    kop, pulsar = s["kop_cores_mean"], s["pulsar_cores_mean"]
    head = f"With {n} instance{'s' if n > 1 else ''}"
    if kop + pulsar >= 0.85 * cores:
        return (
            f"{head} kop took {kop:.2f} cores and Pulsar {pulsar:.2f} of this machine's "
            f"{cores}, the clients the rest: the machine, not "
            "one event loop, is the limit here" + (f" ({s['why']})." if s["why"] else ".")
        )
    if kop >= 0.9 * n:
        return (
            f"{head} kop's event loops are busy {kop:.2f} cores of {n} (Pulsar {pulsar:.2f}): "
            "the loop, not Pulsar, is the limit here, and produce latency is the time a "
            "request waits for it (loop lag above)."
        )
    return f"{head} kop took {kop:.2f} cores and Pulsar {pulsar:.2f}: " + (
        f"short of keeping up ({s['why']})." if s["why"] else "it kept up."
    )


def report(results: dict[str, Any], args: argparse.Namespace, commit: str) -> str:
    lines = [
        BEGIN,
        "## Many clients at a steady load: "
        + " and ".join(str(r["instances"]) for r in results.get("steady", []))
        + " instance(s)",
        "",
        f"`python -m bench.load` at `{commit}`, {datetime.date.today()}: {args.topics} topics "
        f"of {args.partitions} partitions ({args.topics * args.partitions} in all), "
        f"{args.producers} franz-go producers (acks=all, linger 5 ms) and "
        f"{args.consumers} consumers in {args.groups} groups, each a client with its own "
        f"connections, {args.rate:.0f} records/s of {args.bytes} bytes offered for "
        f"{args.minutes} min after the groups settled. Pulsar, kop and the clients share "
        "this 2-core machine. Every client connects from 127.0.0.1, so kop's per-address "
        "limits are raised as an operator raises them for such a host "
        "(`KOP_MAX_CONNECTIONS_PER_IP_OVERRIDES=127.0.0.1:1000`, "
        "`KOP_MAX_CONNECTION_CREATION_RATE_PER_IP=500`): with the defaults (200 open, 50 new "
        "a second) most of these clients are refused, the first limit this load meets.",
        "",
        "| | offered/s | acknowledged/s | failed | produce p99 (median window / worst) | "
        "end-to-end p99 | assignments after settling | kop cores | kop RSS first → last | "
        "loop lag p99, worst window |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in results.get("steady", []):
        s = run["summary"]
        first, last = s["kop_rss_mb_first_last"]
        lines.append(
            f"| {run['instances']} instance{'s' if run['instances'] > 1 else ''} "
            f"| {s['offered_rps']:.0f} | {s['acked_rps']:.0f} | {s['failed']} "
            f"| {s['p99_ms_median']:.1f} / {s['p99_ms_worst']:.1f} ms "
            f"| {s['e2e_p99_ms_median']:.0f} ms | {s['assignments_after_ready']} "
            f"| {s['kop_cores_mean']:.2f} | {first:.0f} → {last:.0f} MB "
            f"| {s['lag_p99_ms_worst']:.0f} ms |"
        )
    for run in results.get("steady", []):
        lines += ["", _limit(run)]
    if results.get("ramp"):
        lines += ["", "One instance, rising offered rate (the same clients):", "",
                  "| offered/s | acknowledged/s | produce p99 | kop cores | Pulsar cores | "
                  "loop lag p99 | keeps up |", "|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
        for st in results["ramp"]["steps"]:
            lines.append(
                f"| {st['rate']:.0f} | {st['acked_rps']:.0f} | {st['p99_ms_median']:.1f} ms "
                f"| {st['kop_cores_mean']:.2f} | {st['pulsar_cores_mean']:.2f} "
                f"| {st['lag_p99_ms_worst']:.0f} ms | {'yes' if st['kept_up'] else st['why']} |"
            )
    lines += ["", "![kop under many clients](images/load.png)", "", END]
    return "\n".join(lines)


def plot(results: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("p99_ms", "produce p99 (ms)", "windows"),
        ("kop_cores", "kop CPU (cores)", "samples"),
        ("kop_rss_mb", "kop RSS (MB)", "samples"),
        ("lag_p99_ms", "event-loop lag p99 (ms)", "samples"),
    ]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 8.5), sharex=True)
    for ax, (key, label, where) in zip(axes, panels, strict=True):
        for run in results.get("steady", []):
            rows = run[where]
            ax.plot(
                [r["t"] for r in rows],
                [r[key] for r in rows],
                label=f"{run['instances']} instance{'s' if run['instances'] > 1 else ''}",
            )
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend()
    axes[-1].set_xlabel("seconds after the groups settled")
    fig.suptitle("kop under many clients at a steady offered load")
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=100)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    ap.add_argument("--instances", default="1,3", help="comma list of instance counts")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--producers", type=int, default=100)
    ap.add_argument("--consumers", type=int, default=100)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--rate", type=float, default=2000.0, help="records/s offered in all")
    ap.add_argument("--bytes", type=int, default=512)
    ap.add_argument("--every", type=int, default=10, help="seconds per window")
    ap.add_argument("--ramp", default="", help="rates for one instance, e.g. 2000,4000,8000")
    ap.add_argument("--step-s", type=int, default=60)
    pulsar_options(ap)
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = ap.parse_args(argv)
    if pulsar_missing(args.http_url):
        return 2
    commit = head_commit()
    results: dict[str, Any] = {"steady": []}
    for n in (int(x) for x in args.instances.split(",") if x):
        results["steady"].append(steady(n, args))
    if args.ramp:
        results["ramp"] = ramp(args)
    payload = {"commit": commit, "args": vars(args), "at": time.time(), "results": results}
    publish(RESULTS / "load.json", payload, report(results, args, commit),
            lambda: plot(results), args.write, DOC, (BEGIN, END))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
