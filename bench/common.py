"""Shared pieces: the workload, progress lines, phase results, CPU accounting."""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.request
from argparse import ArgumentParser
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MB = 1_000_000  # throughput is reported in MB/s = 10^6 bytes of key+value per second
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Workload:
    records: int  # per throughput phase
    value_bytes: int = 1024
    key_bytes: int = 16
    latency_records: int = 2000
    warmup_records: int = 10_000
    max_phase_s: float = 60.0  # a throughput phase stops producing after this long
    linger_ms: int = 5
    batch_bytes: int = 256 * 1024

    def key(self, i: int) -> str:
        return f"{i:0{self.key_bytes}d}"

    @property
    def record_bytes(self) -> int:
        return self.value_bytes + self.key_bytes


class Values:
    """A pool of incompressible values; record i carries values[i % len]."""

    def __init__(self, size: int, count: int = 257, seed: int = 7) -> None:
        rnd = random.Random(seed)
        self.pool = [rnd.randbytes(size) for _ in range(count)]

    def __getitem__(self, i: int) -> bytes:
        return self.pool[i % len(self.pool)]


def head_commit() -> str:
    """The checkout's commit, which a bench's figures are stamped with ("?" outside git)."""
    try:
        out = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent.parent),
                              "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=10)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.stdout.strip() if out.returncode == 0 else "?"


def pulsar_options(ap: ArgumentParser) -> None:
    """The Pulsar a bench runs against (the local standalone by default)."""
    ap.add_argument("--pulsar-url", default="pulsar://localhost:6650")
    ap.add_argument("--http-url", default="http://localhost:8080")


def pulsar_healthy(http_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{http_url}/admin/v2/brokers/health", timeout=10) as resp:
            return resp.read().decode().strip() == "ok"
    except OSError:
        return False


def pulsar_missing(http_url: str) -> bool:
    """True (and said on stderr) when no healthy Pulsar answers at `http_url`."""
    if pulsar_healthy(http_url):
        return False
    log(f"no healthy Pulsar at {http_url}: start it (python tools/pulsar.py start)")
    return True


def log(line: str) -> None:
    """Progress goes to stderr so stdout holds the report."""
    print(line, file=sys.stderr, flush=True)


class Progress:
    """Prints `label  t  done/total  MB/s  rec/s` at most every `every` seconds."""

    def __init__(self, label: str, total: int, record_bytes: int, every: float = 2.0) -> None:
        self.label = label
        self.total = total
        self.record_bytes = record_bytes
        self.every = every
        self.start = time.perf_counter()
        self._last_t = self.start
        self._last_n = 0

    def tick(self, done: int, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last_t < self.every:
            return
        dt = max(now - self._last_t, 1e-9)
        rate = (done - self._last_n) / dt
        log(
            f"  {self.label:<28} {now - self.start:6.1f}s {done:>9}/{self.total:<9} "
            f"{rate * self.record_bytes / MB:7.1f} MB/s {rate:9.0f} rec/s"
        )
        self._last_t, self._last_n = now, done


@dataclass
class CpuSample:
    wall: float
    ticks: dict[str, int]


class CpuMeter:
    """CPU seconds used per process (client = this process, kop, pulsar JVM) over a phase."""

    def __init__(self) -> None:
        self.pids: dict[str, int] = {}
        # child processes of the client still running (not yet in os.times' children)
        self.client_children: set[int] = set()

    def sample(self) -> CpuSample:
        ticks = {"client": _self_ticks()}
        for pid in self.client_children:
            ticks["client"] += proc_ticks(pid) or 0
        for name, pid in self.pids.items():
            t = proc_ticks(pid)
            if t is not None:
                ticks[name] = t
        return CpuSample(time.perf_counter(), ticks)

    @staticmethod
    def usage(a: CpuSample, b: CpuSample) -> dict[str, float]:
        """Average cores used by each process between two samples (1.0 = one core)."""
        wall = max(b.wall - a.wall, 1e-9)
        return {
            k: round((b.ticks[k] - a.ticks[k]) / _TICK / wall, 2) for k in b.ticks if k in a.ticks
        }


def _self_ticks() -> int:
    t = os.times()  # children: the Java client, once reaped (it runs inside one phase)
    return round((t.user + t.system + t.children_user + t.children_system) * _TICK)


def proc_ticks(pid: int) -> int | None:
    """CPU clock ticks the process has used (user + system); None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def rss_mib(pid: int) -> float:
    """The process's resident set now in MiB (0.0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def _find_jvm(main_class: bytes) -> int | None:
    """A JVM whose command line has `main_class` as one argument (read-only /proc scan)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"java") and main_class in args:
            return int(entry.name)
    return None


def find_pulsar_pid() -> int | None:
    """The standalone broker's JVM, found by its main class."""
    return _find_jvm(b"org.apache.pulsar.PulsarStandaloneStarter")


def find_kafka_pid() -> int | None:
    """The reference Kafka broker's JVM: the pid in the pid file of tools/kafka.py's data dir
    (KOP_KAFKA_DATA, default <cache>/kafka-data), if that process is a `kafka.Kafka` JVM."""
    cache = Path(os.environ.get("KOP_CACHE_DIR") or "~/.cache/kop").expanduser()
    data = Path(os.environ.get("KOP_KAFKA_DATA") or cache / "kafka-data").expanduser()
    try:
        pid = int((data / "kafka.pid").read_text().split()[0])
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    return pid if args[0].endswith(b"java") and b"kafka.Kafka" in args else None


class Rates:
    """MB/s and records/s of whatever moved `bytes` and `records` in `seconds`."""

    bytes: int
    records: int
    seconds: float

    @property
    def mb_s(self) -> float:
        return self.bytes / MB / self.seconds if self.seconds > 0 else 0.0

    @property
    def rec_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


@dataclass
class PhaseResult(Rates):
    target: str  # "kop(kafka)", "kop(pulsar)", "native", "native(java)", "refkafka"
    phase: str  # "produce", "produce-idempotent", "consume", "latency", "perf-produce", ...
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0
    errors: int = 0
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    cpu: dict[str, float] = field(default_factory=dict)
    note: str = ""
    # figures a tool reported itself (Kafka's perf tools: avg_ms, p50_ms, p99_ms, ...)
    stats: dict[str, float] = field(default_factory=dict)

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        data = sorted(self.latencies_ms)
        return data[max(0, math.ceil(q / 100 * len(data)) - 1)]  # nearest rank

    def latency(self, q: float) -> float:
        """The q-th percentile in ms: measured here, or as the tool reported it (stats)."""
        if self.latencies_ms:
            return self.percentile(q)
        return self.stats.get(f"p{q:g}_ms", math.nan)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("latencies_ms")
        if self.phase.startswith("latency"):
            lat = self.latencies_ms
            out["latency_ms"] = {
                "p50": round(self.percentile(50), 3),
                "p99": round(self.percentile(99), 3),
                "max": round(max(lat), 3) if lat else None,
                "mean": round(statistics.fmean(lat), 3) if lat else None,
            }
        else:
            out["mb_s"] = round(self.mb_s, 2)
            out["records_s"] = round(self.rec_s, 1)
        if not self.stats:
            out.pop("stats")
        out["seconds"] = round(self.seconds, 3)
        return out


def write_doc_section(doc: Path, section: str, begin: str, end: str, heading: str) -> None:
    """Put `section` (which starts with `begin` and ends with `end`) in `doc`: in place
    of the one between those markers, or at the end under `heading` (added once)."""
    text = doc.read_text()
    if begin in text:
        head, rest = text.split(begin, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        if heading not in text:
            text = text.rstrip("\n") + f"\n\n{heading}\n"
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(text)


def publish(
    results: Path, payload: dict[str, Any], section: str, draw: Callable[[], None],
    write: bool, doc: Path, markers: tuple[str, str],
) -> None:  # fmt: skip
    """What a bench found: its figures as JSON at `results`, its report on stdout, its
    plot drawn, and with `write` the report in `doc` between `markers`."""
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(payload, indent=2))
    print(section)
    draw()
    if write:
        write_doc_section(doc, section, *markers, "")
