"""How much memory kop holds with many open partitions (`python -m bench.memory`).

One kop process, one topic of `--partitions` partitions. kop's resident set,
threads and idle CPU are read from /proc after each step:

  idle      kop started, nothing open
  opened    every partition opened (one ListOffsets for all of them)
  written   `--records` records of `--value-bytes` produced to every partition;
            more than the tail budget in total, so the budget has to hold
  read      everything read back from the earliest offset by one consumer,
            so the oldest records come from history readers, not tail buffers

The figures go to bench/results/memory.json and, with --write, into the
generated section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from bench import report
from bench.common import Progress, Values, log, pulsar_healthy, write_doc_section
from bench.kop_process import KopProcess, free_port

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- memory:begin -->", "<!-- memory:end -->"
_TICK = os.sysconf("SC_CLK_TCK")
# Retriable in Kafka (InvalidMetadataException), though librdkafka's flag says no.
_STILL_OPENING = {KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION}


@dataclass
class Point:
    step: str
    seconds: float  # how long the step took
    rss_mib: float
    peak_mib: float  # VmHWM: the highest resident set so far
    threads: int
    idle_cpu: float  # cores used by kop over a quiet interval after the step
    tail_buffer_mib: float
    history_readers: float  # kept for reuse at the end of the step
    owned_partitions: float


def _status(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM", "Threads"):
            out[name] = int(rest.split()[0])
    return out


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _metrics(admin_port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("kop_") and "{" not in line:
            name, value = line.split()
            out[name] = float(value)
    return out


def measure(step: str, seconds: float, kop: KopProcess, admin_port: int, quiet_s: float) -> Point:
    before = _cpu_ticks(kop.pid)
    time.sleep(quiet_s)  # a fixed interval over which idle CPU is averaged
    cpu = (_cpu_ticks(kop.pid) - before) / _TICK / quiet_s
    st, m = _status(kop.pid), _metrics(admin_port)
    p = Point(
        step=step,
        seconds=round(seconds, 1),
        rss_mib=round(st["VmRSS"] / 1024, 1),
        peak_mib=round(st["VmHWM"] / 1024, 1),
        threads=st["Threads"],
        idle_cpu=round(cpu, 3),
        tail_buffer_mib=round(m.get("kop_tail_buffer_bytes", 0) / 2**20, 1),
        history_readers=m.get("kop_kept_history_readers", 0),
        owned_partitions=m.get("kop_owned_partitions", 0),
    )
    log(
        f"  {step:<8} {p.seconds:6.1f}s  rss {p.rss_mib:7.1f} MiB  peak {p.peak_mib:7.1f} MiB  "
        f"threads {p.threads:5}  idle cpu {p.idle_cpu:.2f}  tail {p.tail_buffer_mib} MiB  "
        f"owned {p.owned_partitions:.0f}"
    )
    return p


def open_all(admin: AdminClient, topic: str, partitions: int) -> int:
    """ListOffsets latest for every partition: each answer needs the partition open.
    A partition still opening answers a retriable error; ask again, as clients do.
    Returns how many rounds it took."""
    todo = set(range(partitions))
    deadline = time.monotonic() + 600
    rounds = 0
    while todo:
        rounds += 1
        wanted = {TopicPartition(topic, p): OffsetSpec.latest() for p in sorted(todo)}
        for tp, fut in admin.list_offsets(wanted, request_timeout=120).items():
            try:
                fut.result(180)
                todo.discard(tp.partition)
            except KafkaException as exc:
                err = exc.args[0]
                again = err.retriable() or err.code() in _STILL_OPENING
                if not again or time.monotonic() > deadline:
                    raise
        log(f"  open round {rounds}: {partitions - len(todo)}/{partitions} partitions open")
    return rounds


def write(bootstrap: str, topic: str, partitions: int, records: int, values: Values) -> None:
    total = partitions * records
    failed: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.size": 262144,
            "queue.buffering.max.kbytes": 262144,
        }
    )
    progress = Progress("write", total, len(values[0]))
    for i in range(total):
        while True:
            try:
                p.produce(topic, values[i], partition=i % partitions, on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
        progress.tick(i)
    if p.flush(300) or failed:
        raise RuntimeError(f"{len(failed)} records failed, e.g. {failed[:1]}")
    progress.tick(total, force=True)


def read(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    total = partitions * records
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "fetch.max.bytes": 8 << 20,
            "max.partition.fetch.bytes": 1 << 20,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    progress = Progress("read", total, 1024)
    seen, deadline = 0, time.monotonic() + 600
    try:
        while seen < total:
            if time.monotonic() > deadline:
                raise RuntimeError(f"read only {seen} of {total} records in 600 s")
            for m in c.consume(1000, 1.0):
                if m.error() is not None:
                    raise RuntimeError(f"consume: {m.error()}")
                seen += 1
            progress.tick(seen)
    finally:
        c.close()
    progress.tick(seen, force=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    admin_port = free_port()
    config = Path(tempfile.mkdtemp()) / "kop.toml"
    config.write_text(f"tail_buffer_bytes = {args.tail_budget_mib * 2**20}\n")
    kop = KopProcess(
        RESULTS / "memory-kop.log",
        pulsar_url=args.pulsar_url,
        http_url=args.http_url,
        extra_args=["--admin-port", str(admin_port), "--config", str(config)],
    )
    topic = f"memory-{time.strftime('%Y%m%d-%H%M%S')}"
    points: list[Point] = []
    kop.start()
    try:
        bootstrap = kop.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        points.append(measure("idle", 0, kop, admin_port, args.quiet_s))
        fut = admin.create_topics(
            [NewTopic(topic, args.partitions, 1, config={"kop.entry.format": args.format})]
        )[topic]
        fut.result(300)
        t = time.perf_counter()
        open_all(admin, topic, args.partitions)
        points.append(measure("opened", time.perf_counter() - t, kop, admin_port, args.quiet_s))
        t = time.perf_counter()
        write(bootstrap, topic, args.partitions, args.records, Values(args.value_bytes))
        points.append(measure("written", time.perf_counter() - t, kop, admin_port, args.quiet_s))
        t = time.perf_counter()
        read(bootstrap, topic, args.partitions, args.records)
        points.append(measure("read", time.perf_counter() - t, kop, admin_port, args.quiet_s))
        if not args.keep_topic:
            admin.delete_topics([topic])[topic].result(300)
    finally:
        code = kop.stop()
    if code not in (0, None):
        log(f"warning: kop exited with {code}; see {kop.log_path}")
    return {
        "date": time.strftime("%Y-%m-%d"),
        "machine": report.machine(),
        "kop_revision": report.kop_revision(REPO),
        "settings": {k: v for k, v in vars(args).items() if k not in ("write",)},
        "points": [asdict(p) for p in points],
    }


def markdown(doc: dict[str, Any]) -> str:
    s = doc["settings"]
    data_mib = s["partitions"] * s["records"] * s["value_bytes"] / 2**20
    rows = [
        "| step | took s | RSS MiB | peak MiB | threads | idle CPU (cores) "
        "| tail buffers MiB | kept history readers |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in doc["points"]:
        rows.append(
            f"| {p['step']} | {p['seconds']} | {p['rss_mib']} | {p['peak_mib']} "
            f"| {p['threads']} | {p['idle_cpu']} | {p['tail_buffer_mib']} "
            f"| {p['history_readers']:.0f} |"
        )
    rev = doc["kop_revision"]
    return "\n".join(
        [
            BEGIN,
            f"Generated by `python -m bench.memory` on {doc['date']} (kop {rev.get('commit')}, "
            f"{doc['machine'].get('nproc')} cores): one topic of {s['partitions']:,} partitions in "
            f"the `{s['format']}` format, {s['records']} records of {s['value_bytes']} B "
            f"written to each ({data_mib:,.0f} MiB in all) with a tail budget of "
            f"{s['tail_budget_mib']} MiB, "
            "then read back from the earliest offset by one consumer.",
            "",
            *rows,
            END,
        ]
    )


def write_doc(section: str) -> None:
    write_doc_section(DOC, section, BEGIN, END, "## Memory with many open partitions")


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench.memory",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--records", type=int, default=100, help="per partition")
    ap.add_argument("--value-bytes", type=int, default=1024)
    ap.add_argument("--format", choices=("pulsar", "kafka"), default="pulsar")
    ap.add_argument("--tail-budget-mib", type=int, default=64)
    ap.add_argument("--quiet-s", type=float, default=5.0, help="idle-CPU interval per step")
    ap.add_argument("--pulsar-url", default="pulsar://127.0.0.1:6650")
    ap.add_argument("--http-url", default="http://127.0.0.1:8080")
    ap.add_argument("--keep-topic", action="store_true")
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    if not pulsar_healthy(args.http_url):
        log(
            f"Pulsar is not healthy at {args.http_url}; "
            "start it with `python tools/pulsar.py start`"
        )
        return 2
    doc = run(args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "memory.json").write_text(json.dumps(doc, indent=2) + "\n")
    section = markdown(doc)
    print(section)
    if args.write:
        write_doc(section)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
