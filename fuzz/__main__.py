"""`python -m fuzz decoders | live | soak`: see `--help` of each."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from fuzz import corpus
from fuzz.cleanup import drop_namespaces
from fuzz.isolated import CheckFailed, Crashed, Hung, Isolated
from fuzz.live import LiveFuzzer, LiveReport
from fuzz.mutate import mutate
from fuzz.seeds import all_seeds
from fuzz.targets import ALLOWED, TARGETS

REPO = Path(__file__).resolve().parents[1]


def decoders(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    seeds = [s.frame for s in all_seeds(rng, 2)] + corpus.real_frames()
    outcomes: Counter[str] = Counter()
    found = 0
    started = last = time.monotonic()
    with Isolated(
        TARGETS[args.target], allowed=ALLOWED[args.target], timeout_s=args.hang_s
    ) as calls:
        for done in range(1, args.frames + 1):
            mutant = mutate(rng.choice(seeds), rng, seeds)
            try:
                outcomes[calls.check(mutant.frame).partition(":")[0]] += 1
            except CheckFailed as exc:
                kind = {Crashed: "abort", Hung: "hang"}.get(type(exc), "unexpected")
                found += 1
                outcomes[kind] += 1
                where = corpus.save(mutant.wire, kind, args.corpus) if args.keep else None
                print(f"[fuzz] {kind} on {mutant.how}: kept in {where}", flush=True)
            if time.monotonic() - last >= 10 or done == args.frames:
                last = time.monotonic()
                rate = done / (last - started)
                print(f"[fuzz] {done:,} frames, {rate:,.0f}/s: {dict(outcomes)}", flush=True)
    return 1 if found else 0


def _print_progress(report: LiveReport) -> None:
    print(
        f"[fuzz] {report.frames:,} frames, {report.rate:,.0f}/s, {len(report.probes)} probes "
        f"(p99 {report.probe_p99() * 1000:.0f} ms): {dict(report.outcomes)}",
        flush=True,
    )


def _fuzzer(args: argparse.Namespace, host: str, port: int) -> LiveFuzzer:
    return LiveFuzzer(
        host,
        port,
        seed=args.seed,
        concurrency=args.concurrency,
        probe_every=args.probe_every,
        silence_s=args.silence,
        corpus_dir=args.corpus if args.keep else None,
        progress=_print_progress,
    )


def _rss_mib(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of `pid` in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def _run_with_steady(
    fuzzer: LiveFuzzer, frames: int, bootstrap: str
) -> tuple[LiveReport, dict[str, object]]:
    steady = subprocess.Popen(
        [sys.executable, "-m", "fuzz.steady", "--bootstrap", bootstrap, "--seconds", "1e9"],
        stdout=subprocess.PIPE,
        cwd=REPO,
    )
    try:
        report = asyncio.run(fuzzer.run(frames))
    finally:
        steady.send_signal(signal.SIGINT)
        out, _ = steady.communicate(timeout=60)
    return report, json.loads(out or b"{}")


def _summary(report: LiveReport, steady: dict[str, object], rss: tuple[float, float] | None) -> int:
    _print_progress(report)
    if steady:
        print(f"[fuzz] well-behaved client alongside: {steady}", flush=True)
    if rss is not None:
        print(f"[fuzz] kop RSS now {rss[0]:.0f} MiB, peak {rss[1]:.0f} MiB", flush=True)
    for failure in report.failures:
        print(f"[fuzz] FAILED: {failure}", flush=True)
    for path in report.kept:
        print(f"[fuzz] kept {path}", flush=True)
    return 1 if report.failures else 0


def live(args: argparse.Namespace) -> int:
    host, _, port = args.bootstrap.rpartition(":")
    fuzzer = _fuzzer(args, host, int(port))
    if args.steady:
        report, steady = _run_with_steady(fuzzer, args.frames, args.bootstrap)
    else:
        report, steady = asyncio.run(fuzzer.run(args.frames)), {}
    return _summary(report, steady, _rss_mib(args.kop_pid) if args.kop_pid else None)


def soak(args: argparse.Namespace) -> int:
    """A kop of its own (own namespaces, so nothing else is touched), the fuzzer and a
    well-behaved client against it, kop's peak memory at the end."""
    port, admin_port = _free_port(), _free_port()
    suffix = uuid.uuid4().hex[:8]
    env = {
        **os.environ,
        "KOP_PORT": str(port),
        "KOP_ADMIN_PORT": str(admin_port),
        "KOP_NAMESPACE": f"fuzz-{suffix}",
        "KOP_SYSTEM_NAMESPACE": f"public/fuzz-sys-{suffix}",
        "KOP_LOG_LEVEL": "WARNING",
        # Mutated partition counts create a few small topics, never Pulsar-sized ones.
        "KOP_MAX_PARTITIONS_PER_TOPIC": "8",
        "KOP_MAX_PARTITIONS_TOTAL": "64",
        "KOP_FETCH_MAX_WAIT_CAP_MS": "500",
        # The fuzzer reconnects after every mutant kop refuses, from one address.
        "KOP_MAX_CONNECTION_CREATION_RATE_PER_IP": "100000",
    }
    log_path = Path(args.log or f"/tmp/kop-fuzz-soak-{suffix}.log")
    with open(log_path, "wb") as log:
        kop = subprocess.Popen(
            [sys.executable, "-m", "kop.cli.main", "serve"],
            env=env,
            stdout=log,
            stderr=log,
            cwd=REPO,
        )
    try:
        _wait_listening(port, kop, log_path)
        print(f"[fuzz] kop pid {kop.pid} on {port}, log {log_path}", flush=True)
        report, steady = _run_with_steady(
            _fuzzer(args, "127.0.0.1", port), args.frames, f"127.0.0.1:{port}"
        )
        if kop.poll() is not None:
            report.failures.append(f"kop exited with {kop.returncode}; see {log_path}")
            rss = None
        else:
            rss = _rss_mib(kop.pid)
        return _summary(report, steady, rss)
    finally:
        kop.terminate()
        kop.wait(60)
        drop_namespaces(
            os.environ.get("KOP_PULSAR_HTTP_URL", "http://localhost:8080"),
            [f"public/fuzz-{suffix}", f"public/fuzz-sys-{suffix}"],
        )


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    import socket

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"kop exited early; see {log_path}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"kop did not listen in 120 s; see {log_path}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--corpus", type=Path, default=corpus.CORPUS)
    parser.add_argument("--no-keep", dest="keep", action="store_false", help="keep no frames")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("decoders", help="mutants through a decoder in a worker process")
    d.add_argument("--frames", type=int, default=100_000)
    d.add_argument("--target", choices=sorted(TARGETS), default="request")
    d.add_argument("--hang-s", type=float, default=20.0)
    for name, what in (
        ("live", "mutants against a running kop"),
        ("soak", "a kop of its own, fuzzed"),
    ):
        p = sub.add_parser(name, help=what)
        p.add_argument("--frames", type=int, default=1_000_000 if name == "soak" else 20_000)
        p.add_argument("--concurrency", type=int, default=16)
        p.add_argument("--probe-every", type=int, default=1000)
        p.add_argument("--silence", type=float, default=2.0)
        if name == "live":
            p.add_argument("--bootstrap", default="localhost:9092")
            p.add_argument("--steady", action="store_true", help="a well-behaved client alongside")
            p.add_argument("--kop-pid", type=int, help="report this kop's memory at the end")
        else:
            p.add_argument("--log", help="kop's log file")
    args = parser.parse_args(argv)
    print(f"[fuzz] seed {args.seed}", flush=True)
    return {"decoders": decoders, "live": live, "soak": soak}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
