"""kop under hostile connections (`python -m bench.hostile_connections`).

One kop against the shared Pulsar. A well-behaved client (one connection, in this
process) produces a 1 KiB record (acks=all) and fetches it back, `--rate` times a
second, through every phase; each request is timed. kop's resident set is read from
/proc every half second, its /metrics every second.

  baseline   the well-behaved client alone
  silent     `--hostile` connections that never send: what one costs kop
  hostile    `--hostile` connections of five kinds at once (bench/hostile_swarm.py:
             silent, trickling after a 100 MiB prefix, stalled in a 1 MiB request,
             pipelining Fetch or Metadata without reading), each reopened when kop
             closes it, plus connection attempts past max_connections
  teardown   the hostile connections closed at once (10 s)
  malformed  one client sending `--malformed-rate` malformed frames a second

Progress lines every 5 s; the report (markdown) on stdout, the figures in
bench/results/hostile.json, and with --write in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import struct
import sys
import time
import urllib.request
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench import hostile_swarm, report
from bench.common import log, write_doc_section
from bench.kop_process import KopProcess, free_port
from bench.run import pulsar_healthy
from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- hostile:begin -->", "<!-- hostile:end -->"
_TICK = os.sysconf("SC_CLK_TCK")
MiB = 1 << 20


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    produce_ms: list[float] = field(default_factory=list)
    fetch_ms: list[float] = field(default_factory=list)
    versions_ms: list[float] = field(default_factory=list)  # no Pulsar: kop alone
    empty_fetches: int = 0
    errors: int = 0
    rss_peak_mib: float = 0.0
    rss_end_mib: float = 0.0
    hwm_mib: float = 0.0  # kop's VmHWM at the end of the phase: the peak so far
    cpu_cores: float = 0.0
    request_memory_peak_mib: float = 0.0
    answer_memory_peak_mib: float = 0.0
    connections_peak: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        timed = {"produce": self.produce_ms, "fetch": self.fetch_ms, "versions": self.versions_ms}
        out = {k: v for k, v in asdict(self).items() if not k.endswith("_ms")}
        for name, values in timed.items():
            out[name] = _percentiles(values)
        return out


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=100, method="inclusive") if len(ordered) > 1 else ordered
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 2),
        "p99": round(q[98] if len(q) > 98 else ordered[-1], 2),
        "max": round(ordered[-1], 2),
    }


def _rss_mib(pid: int, field: str = "VmRSS") -> float:
    """The resident set now (VmRSS), or its highest so far (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _metrics(admin_port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("kop_") and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def _closes(m: dict[str, float]) -> dict[str, int]:
    prefix = 'kop_connections_closed_total{reason="'
    return {k[len(prefix) : -2]: int(v) for k, v in m.items() if k.startswith(prefix)}


class Probe:
    """The well-behaved client: produce then fetch, timed, at a fixed rate; samples
    kop's memory, CPU and metrics while it runs; prints progress lines."""

    def __init__(self, kop: KopProcess, admin_port: int, topic: str, rate: float) -> None:
        self._kop = kop
        self._admin_port = admin_port
        self._topic = topic
        self._rate = rate
        self._client = RawClient(kop.port, timeout=60)
        self._value = os.urandom(1024)
        self._offset = 0

    def run(self, phase: Phase, seconds: float, swarm: Any = None) -> None:
        start = time.monotonic()
        ticks = _cpu_ticks(self._kop.pid)
        next_sample = next_metrics = start
        next_line = start + 5
        i = 0
        while (now := time.monotonic()) - start < seconds:
            due = start + i / self._rate
            if due > now:
                time.sleep(due - now)
            i += 1
            self._once(phase)
            now = time.monotonic()
            if now >= next_sample:
                rss = _rss_mib(self._kop.pid)
                phase.rss_peak_mib = max(phase.rss_peak_mib, rss)
                next_sample = now + 0.5
            if now >= next_metrics:
                self._sample_metrics(phase)
                next_metrics = now + 1
            if now >= next_line:
                self._line(phase, now - start, swarm)
                next_line = now + 5
        phase.seconds = round(time.monotonic() - start, 1)
        phase.cpu_cores = round((_cpu_ticks(self._kop.pid) - ticks) / _TICK / phase.seconds, 2)
        phase.rss_end_mib = round(_rss_mib(self._kop.pid), 1)
        phase.hwm_mib = round(_rss_mib(self._kop.pid, "VmHWM"), 1)
        phase.rss_peak_mib = round(phase.rss_peak_mib, 1)

    def _once(self, phase: Phase) -> None:
        batch = build_batch([Record(0, int(time.time() * 1000), None, self._value)])
        try:
            t = time.perf_counter()
            code, offset = self._client.produce(self._topic, batch)
            phase.produce_ms.append((time.perf_counter() - t) * 1000)
            if code != 0:
                phase.errors += 1
                return
            t = time.perf_counter()
            fetched = self._client.fetch(self._topic, offset)
            phase.fetch_ms.append((time.perf_counter() - t) * 1000)
            part = fetched.responses[0].partitions[0]
            if part.error_code != 0:
                phase.errors += 1
            elif not part.records:
                phase.empty_fetches += 1
            t = time.perf_counter()
            versions = self._client.request(
                18, 3, client_software_name="bench", client_software_version="1"
            )
            phase.versions_ms.append((time.perf_counter() - t) * 1000)
            if versions.error_code != 0:
                phase.errors += 1
        except (OSError, ConnectionError) as exc:
            phase.errors += 1
            log(f"  well-behaved client: {exc!r}; reconnecting")
            self._client = RawClient(self._kop.port, timeout=60)

    def _sample_metrics(self, phase: Phase) -> None:
        m = _metrics(self._admin_port)
        phase.request_memory_peak_mib = max(
            phase.request_memory_peak_mib, round(m.get("kop_request_memory_bytes", 0) / MiB, 1)
        )
        phase.answer_memory_peak_mib = max(
            phase.answer_memory_peak_mib, round(m.get("kop_answer_memory_bytes", 0) / MiB, 1)
        )
        phase.connections_peak = max(phase.connections_peak, m.get("kop_connections", 0))
        phase.notes["closes"] = _closes(m)

    def _line(self, phase: Phase, t: float, swarm: Any) -> None:
        window = max(1, int(5 * self._rate))
        p = _percentiles(phase.produce_ms[-window:])
        f = _percentiles(phase.fetch_ms[-window:])
        v = _percentiles(phase.versions_ms[-window:])
        rate = len(phase.produce_ms[-window:]) / 5
        held = ""
        if swarm is not None:
            held = "  hostile open " + " ".join(
                f"{k}={swarm[2 * i]}/{swarm[2 * i + 1]}c" for i, k in enumerate(hostile_swarm.KINDS)
            )
        log(
            f"  {phase.name:<9} {t:5.0f}s {rate:5.1f} req/s  produce p50 {p.get('p50', 0):6.1f} "
            f"p99 {p.get('p99', 0):7.1f} ms  fetch p50 {f.get('p50', 0):6.1f} "
            f"p99 {f.get('p99', 0):7.1f} ms  versions p99 {v.get('p99', 0):6.1f} ms  "
            f"kop rss {_rss_mib(self._kop.pid):6.1f} MiB "
            f"(peak {phase.rss_peak_mib:.0f})  req mem {phase.request_memory_peak_mib} "
            f"ans mem {phase.answer_memory_peak_mib} MiB  conns {phase.connections_peak:.0f}"
            f"{held}"
        )

    def close(self) -> None:
        self._client.close()


def _wait_connections(admin_port: int, target: float, above: bool, within: float) -> float:
    deadline = time.monotonic() + within
    while True:
        n = _metrics(admin_port).get("kop_connections", 0)
        if (n >= target) if above else (n <= target):
            return n
        if time.monotonic() > deadline:
            log(f"  kop_connections {n} did not reach {target} in {within}s; going on")
            return n
        time.sleep(0.5)


def _create_topics(bootstrap: str, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(60)


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def run(args: argparse.Namespace) -> dict[str, Any]:
    admin_port = free_port()
    max_connections = args.hostile + 10
    env = {
        "KOP_MAX_CONNECTIONS": str(max_connections),
        # All of them from this host, silent ones held to be measured, reopened at
        # once when closed: the per-address limits and the set-up deadline off, so the
        # bench measures what it did before them.
        "KOP_MAX_CONNECTIONS_PER_IP": str(max_connections),
        "KOP_MAX_CONNECTION_CREATION_RATE_PER_IP": "100000",
        "KOP_CONNECTION_SETUP_TIMEOUT_S": "3600",
        "KOP_REQUEST_RECEIVE_TIMEOUT_S": str(args.receive_timeout_s),
        "KOP_RESPONSE_SEND_TIMEOUT_S": str(args.send_timeout_s),
    }
    os.environ.update(env)
    kop = KopProcess(
        RESULTS / "hostile-kop.log",
        pulsar_url=args.pulsar_url,
        http_url=args.http_url,
        extra_args=["--admin-port", str(admin_port)],
        profile=RESULTS / "hostile-profile.txt" if args.profile else None,
    )
    ctx = multiprocessing.get_context("spawn")
    phases: list[Phase] = []
    kop.start()
    try:
        run_id = uuid.uuid4().hex[:8]
        probe_topic, data_topic = f"wellbehaved-{run_id}", f"hostile-data-{run_id}"
        _create_topics(kop.bootstrap, [probe_topic, data_topic])
        filler = RawClient(kop.port)
        for _ in range(8):  # answers of up to 1 MiB for the pipelined fetches
            code, _ = filler.produce(data_topic, build_batch([Record(0, 0, None, bytes(900_000))]))
            assert code == 0, code
        _, fetch = filler.encode(1, 12, **RawClient.fetch_fields(data_topic, 0, wait_ms=500))
        _, metadata = filler.encode(
            3, 12, topics=None, allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )  # fmt: skip
        filler.close()
        frames = {"pipeline_fetch": _framed(fetch), "pipeline_metadata": _framed(metadata)}
        probe = Probe(kop, admin_port, probe_topic, args.rate)
        probe.run(Phase("warm-up"), 5)

        baseline = Phase("baseline")
        log(f"baseline: the well-behaved client alone for {args.baseline_s}s")
        probe.run(baseline, args.baseline_s)
        phases.append(baseline)

        silent = Phase("silent")
        log(f"silent: {args.hostile} connections that never send")
        counters = ctx.Array("q", hostile_swarm.COUNTERS)
        stop = ctx.Event()
        proc = ctx.Process(
            target=hostile_swarm.swarm,
            args=(kop.port, {"silent": args.hostile}, frames, False, counters, stop),
        )
        proc.start()
        silent.notes["connections"] = _wait_connections(admin_port, args.hostile + 1, True, 60)
        probe.run(silent, 10, counters)
        silent.notes["per_connection_kib"] = round(
            (silent.rss_end_mib - baseline.rss_end_mib) * 1024 / args.hostile, 1
        )
        stop.set()
        proc.join(30)
        _wait_connections(admin_port, 1, False, 60)
        phases.append(silent)

        hostile = Phase("hostile")
        kinds = args.kinds.split(",") if args.kinds else list(hostile_swarm.DEFAULT_KINDS)
        mix = {k: args.hostile // len(kinds) for k in kinds}
        log(f"hostile: {sum(mix.values())} connections ({mix}) plus attempts past the limit")
        counters = ctx.Array("q", hostile_swarm.COUNTERS)
        stop = ctx.Event()
        proc = ctx.Process(
            target=hostile_swarm.swarm, args=(kop.port, mix, frames, True, counters, stop)
        )
        proc.start()
        probe.run(hostile, args.hostile_s, counters)
        kinds = hostile_swarm.KINDS
        hostile.notes["reopened_by_kind"] = {k: counters[2 * i + 1] for i, k in enumerate(kinds)}
        churn = hostile_swarm.CHURN
        hostile.notes["past_limit"] = {
            "attempts": counters[2 * churn],
            "closed_at_once": counters[2 * churn + 1],
        }
        phases.append(hostile)
        teardown = Phase("teardown")
        log("teardown: the hostile connections go away at once")
        stop.set()
        probe.run(teardown, 10)
        proc.join(60)
        teardown.notes["connections_left"] = _wait_connections(admin_port, 1, False, 120)
        phases.append(teardown)

        malformed = Phase("malformed")
        log(f"malformed: {args.malformed_rate} malformed frames a second")
        garbage = ctx.Array("q", 3)
        proc = ctx.Process(
            target=hostile_swarm.garbage,
            args=(kop.port, args.malformed_rate, args.malformed_s, metadata, garbage),
        )
        proc.start()
        probe.run(malformed, args.malformed_s)
        proc.join(60)
        malformed.notes["garbage"] = {
            "frames": garbage[0],
            "frames_per_s": round(garbage[0] / max(malformed.seconds, 1), 0),
            "closed_by_kop": garbage[1],
            "answers": garbage[2],
        }
        phases.append(malformed)
        probe.close()
        final = _metrics(admin_port)
    finally:
        code = kop.stop()
        for key in env:
            os.environ.pop(key, None)
    if code not in (0, None):
        log(f"warning: kop exited with {code}; see {kop.log_path}")
    return {
        "date": time.strftime("%Y-%m-%d"),
        "machine": report.machine(),
        "kop_revision": report.kop_revision(REPO),
        "settings": {k: v for k, v in vars(args).items() if k != "write"},
        "kop_config": {
            "max_connections": max_connections,
            "max_queued_request_bytes": final.get("kop_request_memory_limit_bytes"),
            "max_queued_response_bytes": final.get("kop_answer_memory_limit_bytes"),
            "request_receive_timeout_s": args.receive_timeout_s,
            "response_send_timeout_s": args.send_timeout_s,
        },
        "closes": _closes(final),
        "kop_exit_code": code,
        "phases": [p.summary() for p in phases],
    }


def markdown(doc: dict[str, Any]) -> str:
    rows = [
        "| phase | s | pairs | ApiVersions p50 / p99 / max ms | produce p50 / p99 / max ms "
        "| fetch p50 / p99 / max ms | empty fetches | errors | kop RSS peak MiB "
        "| kop VmHWM MiB | kop CPU (cores) | request mem peak MiB | answer mem peak MiB "
        "| connections peak |",
        "|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in doc["phases"]:
        pr, fe, ve = p["produce"], p["fetch"], p["versions"]

        def trio(x: dict[str, float]) -> str:
            return f"{x.get('p50', '-')} / {x.get('p99', '-')} / {x.get('max', '-')}"

        rows.append(
            f"| {p['name']} | {p['seconds']} | {pr.get('n', 0)} | {trio(ve)} | {trio(pr)} "
            f"| {trio(fe)} "
            f"| {p['empty_fetches']} | {p['errors']} | {p['rss_peak_mib']} | {p['hwm_mib']} "
            f"| {p['cpu_cores']} "
            f"| {p['request_memory_peak_mib']} | {p['answer_memory_peak_mib']} "
            f"| {p['connections_peak']:.0f} |"
        )
    by_name = {p["name"]: p for p in doc["phases"]}
    rev = doc["kop_revision"]
    c = doc["kop_config"]
    hostile = by_name.get("hostile", {}).get("notes", {})
    garbage = by_name.get("malformed", {}).get("notes", {}).get("garbage", {})
    silent = by_name.get("silent", {}).get("notes", {})
    s = doc["settings"]
    return "\n".join(
        [
            BEGIN,
            f"Generated by `python -m bench.hostile_connections` on {doc['date']} "
            f"(kop {rev.get('commit')}, {doc['machine'].get('nproc')} cores shared by kop, "
            f"Pulsar and the bench). kop: max_connections {c['max_connections']}, "
            f"max_queued_request_bytes {c['max_queued_request_bytes'] / MiB:.0f} MiB, "
            f"max_queued_response_bytes {c['max_queued_response_bytes'] / MiB:.0f} MiB, "
            f"receive and send timeouts {c['request_receive_timeout_s']:.0f} s "
            f"/ {c['response_send_timeout_s']:.0f} s. The well-behaved client: "
            f"{s['rate']:.0f} produce (1 KiB, acks=all) + fetch + ApiVersions rounds a second.",
            "",
            *rows,
            "",
            f"- silent: {silent.get('connections', 0):.0f} connections open; "
            f"{silent.get('per_connection_kib')} KiB of kop's RSS each.",
            f"- hostile: reopened after kop closed them, by kind: "
            f"{hostile.get('reopened_by_kind')}; attempts past max_connections "
            f"{hostile.get('past_limit')}.",
            f"- malformed: {garbage.get('frames')} frames ({garbage.get('frames_per_s')}/s), "
            f"{garbage.get('closed_by_kop')} connections closed by kop, "
            f"{garbage.get('answers')} answers (INVALID_REQUEST).",
            f"- kop's closes by reason over the run: {doc['closes']}; kop exit code "
            f"{doc['kop_exit_code']}.",
            END,
        ]
    )


def write_doc(section: str) -> None:
    write_doc_section(DOC, section, BEGIN, END, "## Hostile connections")


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench.hostile_connections",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--hostile", type=int, default=1000, help="hostile connections at once")
    ap.add_argument("--rate", type=float, default=20, help="well-behaved pairs a second")
    ap.add_argument("--baseline-s", type=float, default=30)
    ap.add_argument("--hostile-s", type=float, default=90)
    ap.add_argument("--malformed-s", type=float, default=30)
    ap.add_argument("--malformed-rate", type=float, default=1000)
    ap.add_argument("--receive-timeout-s", type=float, default=60, help="kop's setting")
    ap.add_argument("--send-timeout-s", type=float, default=60, help="kop's setting")
    ap.add_argument("--pulsar-url", default="pulsar://127.0.0.1:6650")
    ap.add_argument("--http-url", default="http://127.0.0.1:8080")
    ap.add_argument("--kinds", default="", help="hostile kinds (comma-separated; default: all)")
    ap.add_argument("--profile", action="store_true", help="kop under py-spy (bench/results)")
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    if not pulsar_healthy(args.http_url):
        log(f"Pulsar is not healthy at {args.http_url}: `python tools/pulsar.py start`")
        return 2
    doc = run(args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "hostile.json").write_text(json.dumps(doc, indent=2) + "\n")
    section = markdown(doc)
    print(section)
    if args.write:
        write_doc(section)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
