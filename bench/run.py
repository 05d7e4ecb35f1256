"""`python -m bench`: kop (both entry formats) vs the native Pulsar client and the
reference Apache Kafka.

For each target (native Pulsar Python client, native Pulsar Java client, kop with
`kafka` entries, kop with `pulsar` entries, the reference Kafka 4.3.1 broker of
tools/kafka.py), one at a time:

1. warm-up: a short produce to a scratch topic (not measured);
2. produce: N records (16-byte keys, 1 KiB values) as fast as the client goes;
3. consume: those N records from the start, every key and value checked;
4. latency: records sent one at a time, produce -> acknowledgement;

and for the Kafka-protocol targets (kop, Kafka) also:

5. produce, idempotent: as 2 with enable.idempotence=true, acks=all;
6. Kafka's own perf tools (the Java client): producer-perf-test, then
   consumer-perf-test over what it wrote.

and once both kop formats have run:

7. latency at half of peak: records offered at half of the slower kop format's
   produce rate, with the produce phase's settings, in `LOADED_ROUNDS` windows of
   `LOADED_S` seconds per target, the targets taking turns (the first fifth of each
   window not timed); kop's produce -> acknowledgement beside the Java Pulsar client's
   send -> a reader has it (end to end), at the same rate.

The reference Kafka is started (tools/kafka.py start) only for its own phases when it
is not running, and stopped afterwards; one that was already running is used and left
running (its CPU then shows in the others' phases, in the CPU column's last figure).

Progress goes to stderr; the report (markdown tables) to stdout, ending with
`ratio kop/native produce: kafka=X.XX pulsar=Y.YY idempotent: kafka=.. pulsar=..
| kop/kafka produce: kafka=.. pulsar=.. idempotent: kafka=.. pulsar=..` (one line).
Results are written to bench/results/latest.json and docs/bench.png.

`--profile` instead runs kop's produce and fetch paths under py-spy (one kop
process per phase) and summarises the hot spots; see bench/profile.py.

`--compacted` instead runs `bench.compacted`: a compacted topic read from offset 0
on kop (whole log, then the compacted view) and on the reference Kafka (whole log,
then cleaned), side by side (`--records` and `--value-bytes` apply; the docs are
updated only by `python -m bench.compacted --write`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import kafka_side, refkafka, report
from bench.common import (
    CpuMeter,
    PhaseResult,
    Values,
    Workload,
    find_kafka_pid,
    find_pulsar_pid,
    log,
    pulsar_healthy,
)
from bench.java_side import JavaClient, LoadedWindows
from bench.kop_process import REPO, KopProcess
from bench.namespaces import bench_namespaces
from bench.native_side import Native, create_topic, delete_topic
from bench.refkafka import RefKafka

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
    ap.add_argument("--quick", action="store_true", help="smaller run (4-5 minutes on 2 cores)")
    ap.add_argument("--records", type=int, help="records per throughput phase")
    ap.add_argument("--latency-records", type=int, help="records for the latency phase")
    ap.add_argument("--max-phase-s", type=float, help="stop producing after this many seconds")
    ap.add_argument("--value-bytes", type=int, default=1024)
    ap.add_argument("--targets", default="native,java,kafka,pulsar,refkafka",
                    help="comma list of native (Python client), java (Java client reference), "
                    "kafka, pulsar (kop entry formats), refkafka (the reference Kafka broker "
                    "of tools/kafka.py)")  # fmt: skip
    ap.add_argument("--no-idempotent", action="store_true",
                    help="skip the idempotent-producer rows (kop and Kafka)")  # fmt: skip
    ap.add_argument("--no-perf-tools", action="store_true",
                    help="skip Kafka's producer-perf-test and consumer-perf-test")  # fmt: skip
    ap.add_argument("--no-loaded", action="store_true",
                    help="skip the latency at half of peak load (7)")  # fmt: skip
    ap.add_argument("--keep-topics", action="store_true", help="do not delete the bench topics")
    ap.add_argument("--pulsar-url", default="pulsar://localhost:6650")
    ap.add_argument("--http-url", default="http://localhost:8080")
    ap.add_argument("--profile", action="store_true",
                    help="profile kop's produce and fetch paths with py-spy instead")  # fmt: skip
    ap.add_argument("--compacted", action="store_true",
                    help="run bench.compacted (a compacted topic read from 0) instead")  # fmt: skip
    ap.add_argument("--no-write", action="store_true", help="do not write latest.json / the plot")
    return ap.parse_args(argv)


def workload(args: argparse.Namespace) -> Workload:
    sizes = dict(QUICK if args.quick else FULL)
    for name in ("records", "latency_records", "max_phase_s"):
        if getattr(args, name) is not None:
            sizes[name] = getattr(args, name)
    sizes["warmup_records"] = min(sizes["warmup_records"], max(1000, sizes["records"] // 10))
    return Workload(value_bytes=args.value_bytes, **sizes)


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
        _, _, bad, why = ops.consume(topics["warm"], w, values, warm, "", quiet=True)
        if bad:
            log(f"warning: {name}: warm-up read: {bad} bad records ({why})")
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
    if r.phase.startswith("latency"):
        body = f"p50 {r.percentile(50):.2f} ms  p99 {r.percentile(99):.2f} ms"
    else:
        body = f"{r.records:,} rec in {r.seconds:.1f}s: {r.mb_s:.1f} MB/s, {r.rec_s:,.0f} rec/s"
        if "p99_ms" in r.stats:
            body += f", avg {r.stats['avg_ms']:.1f} ms p99 {r.stats['p99_ms']:.0f} ms"
    cpu = " ".join(f"{k}={v:.2f}" for k, v in r.cpu.items())
    return f"{r.target} {r.phase}: {body}  errors={r.errors}  cores[{cpu}] {r.note}"


def _kafka_ops(name: str, bootstrap: str) -> Ops:
    """The librdkafka workload against any Kafka-protocol endpoint (kop or Kafka)."""
    return Ops(
        name,
        lambda topic, *a, **k: kafka_side.produce(bootstrap, topic, *a, **k),
        lambda topic, *a, **k: kafka_side.consume(bootstrap, topic, *a, **k),
        lambda topic, *a, **k: kafka_side.latency(bootstrap, topic, *a, **k),
    )


def _kop_ops(fmt: str, bootstrap: str) -> Ops:
    return _kafka_ops(f"kop({fmt})", bootstrap)


# topics of a Kafka-protocol target: the workload's three, the idempotent row's, the perf
# tools', the loaded latency's
KINDS = ("warm", "tput", "lat")
KAFKA_KINDS = (*KINDS, "idem", "perf", "loaded")
# the latency-at-half-of-peak phase: seconds of offered load per window, and windows
# per target (the targets take turns)
LOADED_S = 6.0
LOADED_ROUNDS = 3
# the Java client's untimed first window (C2 compiles its hot paths meanwhile)
LOADED_WARM_S = 10.0


def _kop_topics(
    run_id: str, formats: list[str], kinds: tuple[str, ...] = KINDS
) -> dict[str, dict[str, str]]:
    return {fmt: {kind: f"bench-{run_id}-{fmt}-{kind}" for kind in kinds} for fmt in formats}


def run_extra(
    ops: Ops, bootstrap: str, topics: dict[str, str], w: Workload, values: Values,
    meter: CpuMeter, args: argparse.Namespace, done: list[PhaseResult],
) -> list[PhaseResult]:  # fmt: skip
    """The idempotent-producer row and Kafka's perf tools for a Kafka-protocol target;
    `done` holds the target's results so far (the perf tools are sized from its produce)."""
    out: list[PhaseResult] = []
    name = ops.name
    if not args.no_idempotent:
        log(f"{name}: produce {w.records:,} records, idempotent (enable.idempotence=true, "
            "acks=all)")  # fmt: skip
        a = meter.sample()
        label, idem = f"{name} produce idem", kafka_side.IDEMPOTENT
        n, secs, errors = ops.produce(topics["idem"], w, values, w.records, label, extra=idem)
        b = meter.sample()
        note = f"time cap {w.max_phase_s:.0f} s" if n < w.records else ""
        out.append(PhaseResult(name, "produce-idempotent", n, n * w.record_bytes, secs, errors,
                               cpu=CpuMeter.usage(a, b), note=note))  # fmt: skip
        log("  = " + _summary(out[-1]))
    if not args.no_perf_tools:
        out += run_perf_tools(name, bootstrap, topics["perf"], w, meter, done)
    return out


def run_perf_tools(
    name: str, bootstrap: str, topic: str, w: Workload, meter: CpuMeter,
    done: list[PhaseResult],
) -> list[PhaseResult]:  # fmt: skip
    """producer-perf-test (sized to about `max_phase_s` at the rate librdkafka reached on
    this target), then consumer-perf-test over everything it wrote."""
    out: list[PhaseResult] = []
    plain = report.find(done, name, "produce")
    rate = plain.rec_s if plain is not None and plain.rec_s > 0 else 0.0
    n = w.records if rate <= 0 else min(w.records, max(20_000, int(rate * w.max_phase_s)))
    warm = min(w.warmup_records, n // 10)
    limit = 4 * w.max_phase_s + 60
    log(f"{name}: Kafka producer-perf-test, {n:,} records of {w.value_bytes} B (no keys), "
        f"first {warm:,} warm-up")  # fmt: skip
    a = meter.sample()
    res = refkafka.producer_perf(bootstrap, topic, n, warm, w.value_bytes, w.linger_ms,
                                 w.batch_bytes, f"{name} perf produce", limit)  # fmt: skip
    b = meter.sample()
    out.append(PhaseResult(name, "perf-produce", res.records, res.records * w.value_bytes,
                           res.seconds, res.errors, cpu=CpuMeter.usage(a, b), note=res.note,
                           stats=res.stats))  # fmt: skip
    log("  = " + _summary(out[-1]))
    total = int(res.stats.get("total_records", 0))
    if total <= 0:
        log(f"{name}: producer-perf-test failed ({res.note}); no consumer-perf-test")
        return out
    log(f"{name}: Kafka consumer-perf-test, {total:,} records from the earliest offset")
    a = meter.sample()
    res = refkafka.consumer_perf(bootstrap, topic, total, f"{name} perf consume", limit)
    b = meter.sample()
    out.append(PhaseResult(name, "perf-consume", res.records, res.records * w.value_bytes,
                           res.seconds, res.errors, cpu=CpuMeter.usage(a, b), note=res.note,
                           stats=res.stats))  # fmt: skip
    log("  = " + _summary(out[-1]))
    return out


def loaded_rate(results: list[PhaseResult], formats: list[str]) -> float:
    """Half of the slower kop format's produce rate (records/s): at most half of the peak
    of every target measured at it; 0 when a produce phase is missing."""
    peaks = [r.rec_s for f in formats if (r := report.find(results, f"kop({f})", "produce"))]
    return 0.5 * min(peaks) if len(peaks) == len(formats) and min(peaks) > 0 else 0.0


# one window of a target: (latencies ms, seconds, errors, CPU cores by process)
_Window = tuple[list[float], float, int, dict[str, float]]


def run_loaded(
    formats: list[str], bootstrap: str, topics: dict[str, dict[str, str]], java: JavaClient | None,
    java_topic: str | None, w: Workload, values: Values, meter: CpuMeter, rate: float,
) -> list[PhaseResult]:  # fmt: skip
    """Phase 7 (see the module docstring): one row per kop format, one for Java e2e.

    The targets take turns, LOADED_ROUNDS windows of LOADED_S each, in a rotating order,
    and each row pools its rounds. Pulsar's own stalls (100-700 ms, a few a minute, the
    Java client alone included) decide a one-window p99: taking turns gives every target
    the same chance of meeting them. The note gives each round's p99."""
    count = int(rate * LOADED_S)
    targets: list[str] = [f"kop({f})" for f in formats]
    if java is not None and java_topic is not None:
        targets.append("native(java)")
    rounds: dict[str, list[_Window]] = {}
    log(f"latency at {rate:,.0f} records/s (half of peak): {LOADED_ROUNDS} rounds of "
        f"{LOADED_S:.0f} s per target, taking turns; kop times 1 record in "
        f"{kafka_side.LOADED_SAMPLE}")  # fmt: skip
    with contextlib.ExitStack() as stack:
        jvm = None
        if java is not None and java_topic is not None:
            jvm = stack.enter_context(java.windows(java_topic, w))
            meter.client_children.add(jvm.pid)  # its CPU counts while it runs
            stack.callback(meter.client_children.discard, jvm.pid)
            log(f"native(java): an untimed {LOADED_WARM_S:.0f} s window warms the JIT first")
            jvm.run(int(rate * LOADED_WARM_S), rate)
        _loaded_rounds(targets, jvm, bootstrap, topics, w, values, meter, rate, count, rounds)
    out = [_pooled(target, runs, count, w, rate) for target, runs in rounds.items()]
    for row in out:
        log("  = " + _summary(row))
    return out


def _loaded_rounds(
    targets: list[str], jvm: LoadedWindows | None, bootstrap: str,
    topics: dict[str, dict[str, str]], w: Workload, values: Values, meter: CpuMeter,
    rate: float, count: int, rounds: dict[str, list[_Window]],
) -> None:  # fmt: skip
    for r in range(LOADED_ROUNDS):
        for target in targets[r % len(targets) :] + targets[: r % len(targets)]:
            log(f"{target}: round {r + 1} of {LOADED_ROUNDS}")
            a = meter.sample()
            timed: dict[str, list[float]]
            if target == "native(java)":
                assert jvm is not None
                acks, e2e, secs, errors = jvm.run(count, rate)
                timed = {target: acks, "native(java) e2e": e2e}
            else:
                lat, secs, errors = kafka_side.loaded(
                    bootstrap, topics[target[4:-1]]["loaded"], w, values, rate, count,
                    f"{target} loaded {r + 1}",
                )  # fmt: skip
                timed = {target: lat}
            cpu = CpuMeter.usage(a, meter.sample())
            for row, lat in timed.items():
                rounds.setdefault(row, []).append((lat, secs, errors, cpu))


def _pooled(target: str, runs: list[_Window], count: int, w: Workload, rate: float) -> PhaseResult:
    """One row from a target's rounds: latencies pooled, time and CPU averaged."""
    n = len(runs)
    cpu_keys = set().union(*(c for *_, c in runs))
    by_round = [PhaseResult(target, "latency-loaded", latencies_ms=lat) for lat, *_ in runs]
    p99s = "/".join(f"{r.percentile(99):.0f}" for r in by_round)
    return PhaseResult(
        target, "latency-loaded", count * n, count * n * w.record_bytes,
        sum(secs for _, secs, _, _ in runs), sum(e for _, _, e, _ in runs),
        latencies_ms=[x for lat, *_ in runs for x in lat],
        cpu={k: round(sum(c.get(k, 0.0) for *_, c in runs) / n, 2) for k in cpu_keys},
        note=f"{rate:,.0f} rec/s offered; p99 by round {p99s} ms",
    )  # fmt: skip


def _loaded_with_java(
    args: argparse.Namespace, run_id: str, formats: list[str], bootstrap: str,
    topics: dict[str, dict[str, str]], java: JavaClient | None, w: Workload, values: Values,
    meter: CpuMeter, rate: float,
) -> list[PhaseResult]:  # fmt: skip
    """Phase 7 with a Pulsar topic of its own for the Java client's row."""
    name = f"bench-{run_id}-java-loaded"
    java_topic = None if java is None else _create_native(args.http_url, ("l",), [name])["l"]
    try:
        return run_loaded(formats, bootstrap, topics, java, java_topic, w, values, meter, rate)
    finally:
        if java is not None and not args.keep_topics:
            _delete_native(args.http_url, [name])


def _load(avg: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in avg)


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
    if args.compacted:
        from bench import compacted

        sizes = ["--records", str(args.records)] if args.records else []
        urls = ["--pulsar-url", args.pulsar_url, "--http-url", args.http_url]
        return compacted.main([*sizes, "--value-bytes", str(args.value_bytes), *urls])
    if args.profile:
        from bench.profile import profile_run

        return profile_run(args, w)
    started = time.time()
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    rev = report.kop_revision(REPO)
    run_id = time.strftime("%Y%m%d-%H%M%S")
    wanted = [t.strip() for t in args.targets.split(",") if t.strip()]
    formats = [f for f in ("kafka", "pulsar") if f in wanted]
    log(f"bench {run_id}: up to {w.records:,} records or {w.max_phase_s:.0f} s per produce phase, "
        f"{w.key_bytes} B keys + {w.value_bytes} B values, latency {w.latency_records:,} records, "
        f"targets {', '.join(wanted)}; load average {_load(load_start)}")  # fmt: skip
    values = Values(w.value_bytes)
    meter = CpuMeter()
    pulsar_pid = find_pulsar_pid()
    if pulsar_pid is not None:
        meter.pids["pulsar"] = pulsar_pid
    kafka_pid = find_kafka_pid()  # a reference Kafka running already: what it costs the others
    if kafka_pid is not None:
        meter.pids["kafka"] = kafka_pid
        log(f"a Kafka broker is running already (pid {kafka_pid}): its CPU shows as `kafka` "
            "in every phase")  # fmt: skip
    results: list[PhaseResult] = []
    kinds = KINDS

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

    java: JavaClient | None = None
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
        # A system namespace of its own: it starts beside `make run`'s kop (bench.namespaces).
        held = contextlib.ExitStack()
        env = held.enter_context(bench_namespaces(args.http_url, "run", serving=False))
        kop = KopProcess(RESULTS / "kop.log", pulsar_url=args.pulsar_url, http_url=args.http_url,
                         env=env)  # fmt: skip
        kop.start()
        all_topics = _kop_topics(run_id, formats, KAFKA_KINDS)
        names = [t for kinds_ in all_topics.values() for t in kinds_.values()]
        try:
            meter.pids["kop"] = kop.pid
            kafka_side.create_topics(
                kop.bootstrap, {t: fmt for fmt, ks in all_topics.items() for t in ks.values()}
            )
            for fmt in formats:
                ops = _kop_ops(fmt, kop.bootstrap)
                done = run_target(ops, all_topics[fmt], w, values, meter)
                done += run_extra(ops, kop.bootstrap, all_topics[fmt], w, values, meter, args,
                                  done)  # fmt: skip
                results += done
            rate = 0.0 if args.no_loaded else loaded_rate(results, formats)
            if rate > 0:
                results += _loaded_with_java(args, run_id, formats, kop.bootstrap, all_topics,
                                             java, w, values, meter, rate)  # fmt: skip
        finally:
            if not args.keep_topics:
                for err in kafka_side.delete_topics(kop.bootstrap, names):
                    log(f"warning: could not delete {err}")
            kop_exit = kop.stop()
            meter.pids.pop("kop", None)
            held.close()
        if kop_exit not in (0, None):
            log(f"warning: kop exited with {kop_exit} (see {kop.log_path})")

    kafka_started_here = False
    if "refkafka" in wanted:
        ref = RefKafka()
        try:
            ref.start()
        except RuntimeError as exc:
            log(f"skipping the reference Kafka: {exc}")
        else:
            kafka_started_here = ref.started_here
            bootstrap = refkafka.bootstrap()
            topics = {kind: f"bench-{run_id}-refkafka-{kind}" for kind in KAFKA_KINDS}
            try:
                pid = find_kafka_pid()
                if pid is not None:
                    meter.pids["kafka"] = pid
                kafka_side.create_topics(bootstrap, dict.fromkeys(topics.values()))
                ops = _kafka_ops("refkafka", bootstrap)
                done = run_target(ops, topics, w, values, meter)
                done += run_extra(ops, bootstrap, topics, w, values, meter, args, done)
                results += done
            finally:
                if not args.keep_topics:
                    for err in kafka_side.delete_topics(bootstrap, list(topics.values())):
                        log(f"warning: could not delete {err}")
                ref.stop()
                if kafka_started_here:
                    meter.pids.pop("kafka", None)

    duration = time.perf_counter() - t_start
    restarted = pulsar_pid is not None and find_pulsar_pid() != pulsar_pid
    if restarted:
        log("WARNING: the Pulsar broker was restarted during the run; these numbers are not valid")
    load_end = os.getloadavg()
    doc: dict[str, Any] = {
        "run_id": run_id,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "duration_s": round(duration, 1),
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in load_end],
        "quick": args.quick,
        "machine": report.machine(),
        "versions": report.versions(args.http_url),
        "pulsar_settings": report.pulsar_settings(args.http_url),
        "kop_revision": rev,
        "workload": dataclasses.asdict(w),
        "kafka_started_by_bench": kafka_started_here,
        "results": [r.to_json() for r in results],
        # {base: {phase: {fmt: kop/base}}}, base native / native(java) / refkafka;
        # latency = p50 ratio, latency_p99 = p99 ratio (lower is better)
        "ratios": report.ratios(results),
        # the headline figures with one column per target (the markdown summary table)
        "summary": report.summary(results),
        "kop_exit_code": kop_exit,
        "pulsar_restarted_during_run": restarted,
    }
    if not args.no_write:
        report.write_json(RESULTS / "latest.json", doc)
        try:
            report.plot(results, PLOT, f"kop bench {run_id}: {doc['machine']['nproc']} cores "
                        f"({doc['machine']['cpu']}), Pulsar {doc['versions']['pulsar-broker']} "
                        f"standalone, Kafka {doc['versions']['kafka-broker']} (KRaft, 1 node), "
                        f"1 KiB values")  # fmt: skip
        except ImportError:
            log("matplotlib not installed: no plot (pip install matplotlib)")
    sys.stderr.flush()
    print()
    dirty = "+uncommitted" if rev["kop_dirty"] else ""
    delay = doc["pulsar_settings"].get("managedLedgerNewEntriesCheckDelayInMillis", "?")
    print(f"kop bench {run_id} (kop {rev['commit']}{dirty}): up to {w.records:,} records or "
          f"{w.max_phase_s:.0f} s per produce phase, {w.key_bytes} B keys, {w.value_bytes} B "
          f"values, 1 partition; Pulsar new-entries check delay {delay} ms; "
          f"run took {duration:.0f} s; load average {_load(load_start)} at the start, "
          f"{_load(load_end)} at the end")  # fmt: skip
    print()
    print(report.summary_table(results, doc["versions"].get("kafka-broker", "")))
    print()
    print(report.table(results))
    print()
    if restarted:
        print("WARNING: Pulsar was restarted during this run: the numbers are not valid.")
    if not args.no_write:
        print(f"wrote {(RESULTS / 'latest.json').relative_to(REPO)} and {PLOT.relative_to(REPO)}")
    if report.find(results, "native(java)", "produce") is not None:
        print(report.ratio_line(results, "native(java)"))
    if report.find(results, "native(java) e2e", "latency-loaded") is not None:
        print(report.loaded_line(results))
    print(report.ratio_line(results, extended=True), flush=True)
    failed = any(r.errors for r in results) or (kop_exit not in (0, None))
    return 1 if failed else 0
