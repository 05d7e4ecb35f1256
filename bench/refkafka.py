"""The reference Apache Kafka broker as a bench target, and Kafka's own perf tools.

`RefKafka` starts the broker of tools/kafka.py (Kafka 4.3.1, one KRaft node at
127.0.0.1:19092) when it is not running and stops it afterwards, as the bench does
with kop; a broker that was already running (someone else's) is used and left alone.

`producer_perf` / `consumer_perf` run the distribution's ProducerPerformance and
ConsumerPerformance (`tools/kafka.py tool producer-perf-test|consumer-perf-test`)
against any Kafka-protocol endpoint (kop or the reference) and parse what they print:
the Java client measured by Kafka's own load generator.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.common import MB, Progress, log
from bench.kop_process import REPO

client_log = logging.getLogger("bench.kafka-tools")
KAFKA_TOOL = REPO / "tools" / "kafka.py"


def kafka_version() -> str:
    m = re.search(r'^KAFKA_VERSION = "([^"]+)"', KAFKA_TOOL.read_text(), re.M)
    return m.group(1) if m else "?"


def bootstrap() -> str:
    return f"127.0.0.1:{os.environ.get('KOP_KAFKA_PORT', '19092')}"


def _tool(*args: str, capture: bool) -> subprocess.CompletedProcess[str]:
    # tools/kafka.py prints its progress on stdout: onto our stderr, with the bench's
    return subprocess.run(
        [sys.executable, str(KAFKA_TOOL), *args], text=True, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else sys.stderr, stderr=subprocess.STDOUT,
    )  # fmt: skip


class RefKafka:
    """tools/kafka.py's broker: started here if it is not running, then stopped again."""

    def __init__(self) -> None:
        self.started_here = False

    @staticmethod
    def healthy() -> bool:
        return _tool("status", capture=True).returncode == 0

    def start(self) -> None:
        if self.healthy():
            log(f"reference Kafka {kafka_version()} already running at {bootstrap()}: using it, "
                "leaving it running")  # fmt: skip
            return
        log(f"starting the reference Kafka {kafka_version()} (tools/kafka.py start)")
        t0 = time.perf_counter()
        if _tool("start", capture=False).returncode != 0:
            raise RuntimeError("tools/kafka.py start failed (see above)")
        self.started_here = True
        log(f"reference Kafka healthy at {bootstrap()} after {time.perf_counter() - t0:.0f} s")

    def stop(self) -> None:
        if not self.started_here:
            return
        self.started_here = False
        log("stopping the reference Kafka (tools/kafka.py stop)")
        if _tool("stop", capture=False).returncode != 0:
            log("warning: tools/kafka.py stop failed")


@dataclass
class PerfResult:
    records: int = 0
    seconds: float = 0.0  # records / the tool's rate: the span its rate covers
    errors: int = 0
    note: str = ""
    stats: dict[str, float] = field(default_factory=dict)


def _run(
    args: list[str], label: str, timeout_s: float, on_line: Callable[[str], None] | None = None
) -> tuple[int | None, list[str]]:
    """Run `tools/kafka.py tool ARGS` (which execs the JVM); its stdout lines, and the
    exit code (None when it was killed after `timeout_s`). stderr goes to clients.log."""
    cmd = [sys.executable, str(KAFKA_TOOL), "tool", *args]
    client_log.info("%s: %s", label, " ".join(cmd))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    killed = threading.Event()

    def watchdog() -> None:
        if proc.poll() is None:
            killed.set()
            proc.kill()

    def pump_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.strip():
                client_log.info("%s: %s", label, line.rstrip())

    timer = threading.Timer(timeout_s, watchdog)
    timer.start()
    err = threading.Thread(target=pump_err, daemon=True)
    err.start()
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        client_log.info("%s: %s", label, line)
        lines.append(line)
        if on_line is not None:
            on_line(line)
    rc = proc.wait()
    timer.cancel()
    err.join(5)
    return (None if killed.is_set() else rc), lines


_PRODUCED = re.compile(
    r"(?P<n>\d+) (?P<steady>steady state )?records sent, (?P<rate>[\d.]+) records/sec "
    r"\((?P<mib>[\d.]+) MB/sec\), (?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency"
    r"(?:, (?P<p50>\d+) ms 50th, (?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, "
    r"(?P<p999>\d+) ms 99.9th)?"
)


def producer_perf(
    bootstrap: str, topic: str, records: int, warmup: int, value_bytes: int, linger_ms: int,
    batch_bytes: int, label: str, timeout_s: float, extra: tuple[str, ...] = (),
) -> PerfResult:  # fmt: skip
    """ProducerPerformance at full speed (--throughput -1) with the bench's batching and
    the Java client's defaults otherwise (enable.idempotence=true, acks=all); the
    steady-state figures (after `warmup` records) when it prints them. `extra`: more
    of the tool's options (--transactional-id, --transaction-duration-ms)."""
    args = [
        "producer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic,
        "--num-records", str(records), "--throughput", "-1", "--record-size", str(value_bytes),
        "--warmup-records", str(warmup), "--reporting-interval", "2000", *extra,
        "--command-property", "acks=all", "enable.idempotence=true", f"linger.ms={linger_ms}",
        f"batch.size={batch_bytes}", "compression.type=none",
    ]  # fmt: skip
    prog = Progress(label, records, value_bytes)
    sent = [0]

    def progress(line: str) -> None:
        m = _PRODUCED.match(line)
        if m and m.group("p50") is None:  # an interval line: records in that interval
            sent[0] += int(m.group("n"))
            prog.tick(sent[0], force=True)

    rc, lines = _run(args, label, timeout_s, progress)
    out = PerfResult()
    summary = [m for m in map(_PRODUCED.match, lines) if m and m.group("p50") is not None]
    if rc != 0 or not summary:
        out.errors = 1
        out.note = "killed after the time limit" if rc is None else f"exit code {rc}, no summary"
        return out
    total = summary[0]
    best = next((m for m in summary if m.group("steady")), total)
    out.records = int(best.group("n"))
    rate = float(best.group("rate"))
    out.seconds = out.records / rate if rate > 0 else 0.0
    out.stats = {
        "avg_ms": float(best.group("avg")), "max_ms": float(best.group("max")),
        "p50_ms": float(best.group("p50")), "p95_ms": float(best.group("p95")),
        "p99_ms": float(best.group("p99")), "p99.9_ms": float(best.group("p999")),
        "total_records": int(total.group("n")), "total_records_s": float(total.group("rate")),
    }  # fmt: skip
    if best is not total:
        out.note = f"steady state after {records - out.records:,} warm-up records"
    return out


def consumer_perf(
    bootstrap: str, topic: str, records: int, label: str, timeout_s: float
) -> PerfResult:
    """ConsumerPerformance (subscribe with a fresh group, from the earliest offset) for
    `records` records; the rate is fetch.nMsg.sec, i.e. without the group join, which
    is in stats["rebalance_ms"] (the reference Kafka delays a new group's first join
    by group.initial.rebalance.delay.ms = 3 s)."""
    args = [
        "consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic,
        "--num-records", str(records), "--timeout", "30000",
        "--group", f"bench-perf-{os.getpid()}-{time.monotonic_ns()}",
    ]  # fmt: skip
    t0 = time.perf_counter()
    beat = threading.Event()

    def heartbeat() -> None:  # ConsumerPerformance prints nothing until it is done
        while not beat.wait(5.0):
            log(f"  {label:<28} {time.perf_counter() - t0:6.1f}s (running)")

    hb = threading.Thread(target=heartbeat, daemon=True)
    hb.start()
    try:
        rc, lines = _run(args, label, timeout_s)
    finally:
        beat.set()
    out = PerfResult()
    row: dict[str, str] = {}
    for i, line in enumerate(lines[:-1]):
        if line.startswith("start.time,"):
            row = dict(zip([h.strip() for h in line.split(",")],
                           [v.strip() for v in lines[i + 1].split(",")], strict=False))  # fmt: skip
    if rc != 0 or "fetch.nMsg.sec" not in row:
        out.errors = 1
        out.note = "killed after the time limit" if rc is None else f"exit code {rc}, no summary"
        return out
    out.records = int(row["data.consumed.in.nMsg"])
    fetch_s = float(row["fetch.time.ms"]) / 1000
    out.seconds = fetch_s
    out.stats = {
        "rebalance_ms": float(row["rebalance.time.ms"]),
        "records_s_with_join": float(row["nMsg.sec"]),
        "fetch_mb_s": round(float(row["fetch.MB.sec"]) * 1024 * 1024 / MB, 2),
    }
    if out.records < records:
        out.errors = records - out.records
        out.note = f"stopped at {out.records:,} of {records:,} (30 s without data)"
    else:
        out.note = f"group join {float(row['rebalance.time.ms']) / 1000:.1f} s not timed"
    return out
