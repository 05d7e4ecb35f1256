"""`python -m bench`: kop (both entry formats) vs the native Pulsar client.

For each target (native Pulsar client, kop with `kafka` entries, kop with
`pulsar` entries) against the same Pulsar:

1. warm-up: a short produce to a scratch topic (not measured);
2. produce: N records (16-byte keys, 1 KiB values) as fast as the client goes;
3. consume: those N records from the start, every key and value checked;
4. latency: records sent one at a time, produce -> acknowledgement.

Progress goes to stderr; the report (markdown table) to stdout, ending with
`ratio kop/native produce: kafka=X.XX pulsar=Y.YY`. Results are written to
bench/results/latest.json and docs/bench.png.

`--profile` instead runs kop's produce and fetch paths under py-spy (one kop
process per phase) and summarises the hot spots; see bench/profile.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import kafka_side, report
from bench.common import CpuMeter, PhaseResult, Values, Workload, find_pulsar_pid, log
from bench.java_side import JavaClient
from bench.kop_process import REPO, KopProcess
from bench.native_side import Native, create_topic, delete_topic

RESULTS = REPO / "bench" / "results"
PLOT = REPO / "docs" / "bench.png"

# A produce phase sends `records` or stops after `max_phase_s`, whichever comes first
# (kop with `pulsar` entries is ~10x slower than the rest); consume reads what was produced.
QUICK = {"records": 1_000_000, "latency_records": 1000, "warmup_records": 20_000,
         "max_phase_s": 15.0}  # fmt: skip
FULL = {"records": 3_000_000, "latency_records": 3000, "warmup_records": 50_000,
        "max_phase_s": 40.0}  # fmt: skip


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="smaller run (< 5 minutes)")
    ap.add_argument("--records", type=int, help="records per throughput phase")
    ap.add_argument("--latency-records", type=int, help="records for the latency phase")
    ap.add_argument("--max-phase-s", type=float, help="stop producing after this many seconds")
    ap.add_argument("--value-bytes", type=int, default=1024)
    ap.add_argument("--targets", default="native,java,kafka,pulsar",
                    help="comma list of native (Python client), java (Java client reference), "
                    "kafka, pulsar (kop entry formats)")  # fmt: skip
    ap.add_argument("--keep-topics", action="store_true", help="do not delete the bench topics")
    ap.add_argument("--pulsar-url", default="pulsar://localhost:6650")
    ap.add_argument("--http-url", default="http://localhost:8080")
    ap.add_argument("--profile", action="store_true",
                    help="profile kop's produce and fetch paths with py-spy instead")  # fmt: skip
    ap.add_argument("--no-write", action="store_true", help="do not write latest.json / the plot")
    return ap.parse_args(argv)


def workload(args: argparse.Namespace) -> Workload:
    sizes = dict(QUICK if args.quick else FULL)
    for name in ("records", "latency_records", "max_phase_s"):
        if getattr(args, name) is not None:
            sizes[name] = getattr(args, name)
    sizes["warmup_records"] = min(sizes["warmup_records"], max(1000, sizes["records"] // 10))
    return Workload(value_bytes=args.value_bytes, **sizes)


def pulsar_healthy(http_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{http_url}/admin/v2/brokers/health", timeout=10) as resp:
            return resp.read().decode().strip() == "ok"
    except OSError:
        return False


class Ops:
    """One target's produce/consume/latency, bound to its endpoint."""

    def __init__(
        self,
        name: str,
        produce: Callable[..., tuple[int, float, int]],
        consume: Callable[..., tuple[int, float, int, str]],
        latency: Callable[..., tuple[list[float], int]],
    ) -> None:
        self.name, self.produce, self.consume, self.latency = name, produce, consume, latency


def run_target(
    ops: Ops, topics: dict[str, str], w: Workload, values: Values, meter: CpuMeter,
    phases: tuple[str, ...] = ("produce", "consume", "latency"), produced: int | None = None,
) -> list[PhaseResult]:  # fmt: skip
    """Warm-up, then the phases; `produced` (records in the throughput topic) is
    needed when "consume" runs without "produce"."""
    out: list[PhaseResult] = []
    name = ops.name
    if "produce" in phases:
        log(f"{name}: warm-up ({w.warmup_records:,} records)")
        n, _, errors = ops.produce(topics["warm"], w, values, w.warmup_records, "", quiet=True)
        warm = n - errors
    else:
        warm = w.warmup_records
    produced = w.records if produced is None else produced
    if "produce" in phases:
        log(f"{name}: produce {w.records:,} records")
        a = meter.sample()
        n, secs, errors = ops.produce(topics["tput"], w, values, w.records, f"{name} produce")
        b = meter.sample()
        produced = n - errors  # records the client saw acknowledged
        note = f"time cap {w.max_phase_s:.0f} s" if n < w.records else ""
        out.append(PhaseResult(name, "produce", n, n * w.record_bytes, secs, errors,
                               cpu=CpuMeter.usage(a, b), note=note))  # fmt: skip
    if "consume" in phases:
        log(f"{name}: read the warm-up topic (not measured), then consume {produced:,} records "
            "from offset 0")  # fmt: skip
        ops.consume(topics["warm"], w, values, warm, "", quiet=True)
        a = meter.sample()
        n, secs, errors, note = ops.consume(topics["tput"], w, values, produced, f"{name} consume")
        b = meter.sample()
        out.append(PhaseResult(name, "consume", n, n * w.record_bytes, secs, errors,
                               cpu=CpuMeter.usage(a, b), note=note))  # fmt: skip
    if "latency" in phases:
        log(f"{name}: latency, {w.latency_records:,} records one at a time")
        a = meter.sample()
        t0 = time.perf_counter()
        lat, errors = ops.latency(topics["lat"], w, values, f"{name} latency")
        secs = time.perf_counter() - t0
        b = meter.sample()
        out.append(PhaseResult(name, "latency", len(lat), len(lat) * w.record_bytes, secs, errors,
                               latencies_ms=lat, cpu=CpuMeter.usage(a, b)))  # fmt: skip
    for r in out:
        log("  = " + _summary(r))
    return out


def _summary(r: PhaseResult) -> str:
    if r.phase == "latency":
        body = f"p50 {r.percentile(50):.2f} ms  p99 {r.percentile(99):.2f} ms"
    else:
        body = f"{r.records:,} rec in {r.seconds:.1f}s: {r.mb_s:.1f} MB/s, {r.rec_s:,.0f} rec/s"
    cpu = " ".join(f"{k}={v:.2f}" for k, v in r.cpu.items())
    return f"{r.target} {r.phase}: {body}  errors={r.errors}  cores[{cpu}] {r.note}"


def _kop_ops(fmt: str, bootstrap: str) -> Ops:
    return Ops(
        f"kop({fmt})",
        lambda topic, *a, **k: kafka_side.produce(bootstrap, topic, *a, **k),
        lambda topic, *a, **k: kafka_side.consume(bootstrap, topic, *a, **k),
        lambda topic, *a, **k: kafka_side.latency(bootstrap, topic, *a, **k),
    )


def _kop_topics(run_id: str, formats: list[str]) -> dict[str, dict[str, str]]:
    return {
        fmt: {kind: f"bench-{run_id}-{fmt}-{kind}" for kind in ("warm", "tput", "lat")}
        for fmt in formats
    }


def _setup_logging() -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "clients.log"
    handler = logging.FileHandler(path, mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("bench")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False
    return path


def _create_native(http_url: str, kinds: tuple[str, ...], names: list[str]) -> dict[str, str]:
    return {kind: create_topic(http_url, n) for kind, n in zip(kinds, names, strict=True)}


def _delete_native(http_url: str, names: list[str]) -> None:
    for name in names:
        err = delete_topic(http_url, name)
        if err:
            log(f"warning: could not delete {err}")


def main(argv: list[str]) -> int:
    args = parse(argv)
    w = workload(args)
    if not pulsar_healthy(args.http_url):
        print(f"Pulsar is not healthy at {args.http_url}; start it with "
              "`python tools/pulsar.py start`", file=sys.stderr)  # fmt: skip
        return 2
    _setup_logging()
    if args.profile:
        from bench.profile import profile_run

        return profile_run(args, w)
    started = time.time()
    t_start = time.perf_counter()
    rev = report.kop_revision(REPO)
    run_id = time.strftime("%Y%m%d-%H%M%S")
    wanted = [t.strip() for t in args.targets.split(",") if t.strip()]
    formats = [f for f in ("kafka", "pulsar") if f in wanted]
    log(f"bench {run_id}: up to {w.records:,} records or {w.max_phase_s:.0f} s per produce phase, "
        f"{w.key_bytes} B keys + {w.value_bytes} B values, latency {w.latency_records:,} records, "
        f"targets {', '.join(wanted)}")  # fmt: skip
    values = Values(w.value_bytes)
    meter = CpuMeter()
    pulsar_pid = find_pulsar_pid()
    if pulsar_pid is not None:
        meter.pids["pulsar"] = pulsar_pid
    results: list[PhaseResult] = []
    kinds = ("warm", "tput", "lat")

    if "native" in wanted:
        names = [f"bench-{run_id}-native-{kind}" for kind in kinds]
        native = Native(args.pulsar_url)
        try:
            topics = _create_native(args.http_url, kinds, names)
            ops = Ops("native", native.produce, native.consume, native.latency)
            results += run_target(ops, topics, w, values, meter)
            if native.e2e_ms:
                e2e = PhaseResult("native e2e", "latency", len(native.e2e_ms),
                                  latencies_ms=native.e2e_ms)  # fmt: skip
                log("  = " + _summary(e2e))
                results.append(e2e)
        finally:
            native.close()
            if not args.keep_topics:
                _delete_native(args.http_url, names)

    if "java" in wanted:
        names = [f"bench-{run_id}-java-{kind}" for kind in kinds]
        try:
            java = JavaClient(args.pulsar_url)
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            log(f"skipping the Java reference: {exc}")
        else:
            try:
                topics = _create_native(args.http_url, kinds, names)
                ops = Ops("native(java)", java.produce, java.consume, java.latency)
                results += run_target(ops, topics, w, values, meter)
            finally:
                if not args.keep_topics:
                    _delete_native(args.http_url, names)

    kop_exit: int | None = None
    if formats:
        log("starting kop")
        rev = report.kop_revision(REPO)  # what kop runs is the tree at its start
        kop = KopProcess(RESULTS / "kop.log", pulsar_url=args.pulsar_url, http_url=args.http_url)
        kop.start()
        all_topics = _kop_topics(run_id, formats)
        names = [t for kinds_ in all_topics.values() for t in kinds_.values()]
        try:
            meter.pids["kop"] = kop.pid
            kafka_side.create_topics(
                kop.bootstrap, {t: fmt for fmt, ks in all_topics.items() for t in ks.values()}
            )
            for fmt in formats:
                ops = _kop_ops(fmt, kop.bootstrap)
                results += run_target(ops, all_topics[fmt], w, values, meter)
        finally:
            if not args.keep_topics:
                for err in kafka_side.delete_topics(kop.bootstrap, names):
                    log(f"warning: could not delete {err}")
            kop_exit = kop.stop()
            meter.pids.pop("kop", None)
        if kop_exit not in (0, None):
            log(f"warning: kop exited with {kop_exit} (see {kop.log_path})")

    duration = time.perf_counter() - t_start
    restarted = pulsar_pid is not None and find_pulsar_pid() != pulsar_pid
    if restarted:
        log("WARNING: the Pulsar broker was restarted during the run; these numbers are not valid")
    doc: dict[str, Any] = {
        "run_id": run_id,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "duration_s": round(duration, 1),
        "quick": args.quick,
        "machine": report.machine(),
        "versions": report.versions(args.http_url),
        "pulsar_settings": report.pulsar_settings(args.http_url),
        "kop_revision": rev,
        "workload": dataclasses.asdict(w),
        "results": [r.to_json() for r in results],
        "ratios": {
            base: {
                phase: {fmt: round(report.ratio(results, fmt, phase, base), 3) for fmt in formats}
                for phase in ("produce", "consume", "latency")
            }
            for base in ("native", "native(java)")
        },
        "kop_exit_code": kop_exit,
        "pulsar_restarted_during_run": restarted,
    }
    if not args.no_write:
        report.write_json(RESULTS / "latest.json", doc)
        try:
            report.plot(results, PLOT, f"kop bench {run_id}: {doc['machine']['nproc']} cores "
                        f"({doc['machine']['cpu']}), Pulsar {doc['versions']['pulsar-broker']} "
                        f"standalone, 1 KiB values")  # fmt: skip
        except ImportError:
            log("matplotlib not installed: no plot (pip install matplotlib)")
    sys.stderr.flush()
    print()
    dirty = "+uncommitted" if rev["kop_dirty"] else ""
    delay = doc["pulsar_settings"].get("managedLedgerNewEntriesCheckDelayInMillis", "?")
    print(f"kop bench {run_id} (kop {rev['commit']}{dirty}): up to {w.records:,} records or "
          f"{w.max_phase_s:.0f} s per produce phase, {w.key_bytes} B keys, {w.value_bytes} B "
          f"values, 1 partition; Pulsar new-entries check delay {delay} ms; "
          f"run took {duration:.0f} s")  # fmt: skip
    print()
    print(report.table(results))
    print()
    if restarted:
        print("WARNING: Pulsar was restarted during this run: the numbers are not valid.")
    if not args.no_write:
        print(f"wrote {(RESULTS / 'latest.json').relative_to(REPO)} and {PLOT.relative_to(REPO)}")
    if report.find(results, "native(java)", "produce") is not None:
        print(report.ratio_line(results, "native(java)"))
    print(report.ratio_line(results), flush=True)
    failed = any(r.errors for r in results) or (kop_exit not in (0, None))
    return 1 if failed else 0
