"""Pulsar's heap under a long mixed workload through kop (`python -m bench.pulsar_soak`).

Issue 18: after 75 minutes of mixed clients against one `make run`, its Pulsar
ran out of heap. This runs such a mix (bench/soak_clients.py: trickling and bulk
producers over `--topics` topics, history seeks with confluent-kafka and
kafka-python, rebalancing consumer groups, a tail consumer, topics created and
deleted) for `--minutes`, and every `--sample-s` samples Pulsar's heap (used,
old generation after GC, and every `--live-every-s` the live heap after a forced
full GC), kop's resident set, and the `kop-reader-*` subscriptions kop created on
the broker (counted in the broker's log, and by kop's own metric).

    python -m bench.pulsar_soak --minutes 60 --write

It starts kop from this checkout against `--pulsar-url`/`--http-url` (or uses a
running one: `--bootstrap`, `--kop-admin`, `--kop-pid`). Pulsar's pid and log come
from `--pulsar-data` (tools/pulsar.py's data dir). The samples go to
bench/results/pulsar-soak-<time>.json, the plot to docs/images/pulsar-soak.png,
and with --write a summary into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import report
from bench.common import log, pulsar_healthy, rss_mib
from bench.kop_process import KopProcess, free_port
from bench.soak_clients import Clients, Mix, Tally
from bench.soak_probe import (
    SubscribeCounter,
    class_histogram,
    live_heap_mib,
    pick,
    pulsar_heap,
    scrape,
)

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "benchmarks.md"
PLOT = REPO / "docs" / "images" / "pulsar-soak.png"
BEGIN, END = "<!-- pulsar-soak:begin -->", "<!-- pulsar-soak:end -->"


@dataclass
class Sample:
    t_s: float
    heap_used_mib: float
    heap_committed_mib: float
    old_after_gc_mib: float
    direct_mib: float
    live_mib: float | None  # after a forced full GC (only every --live-every-s)
    kop_rss_mib: float
    kop_tail_buffers_mib: float
    subscribes_per_s: float | None  # kop-reader subscribe requests in the broker's log
    kop_readers_per_s: float | None  # readers kop opened (its own metric)
    pulsar_topics: float
    pulsar_consumers: float  # on all topics
    kop_readers_open: float | None
    young_gcs: float
    full_gcs: float
    counts: dict[str, int]
    errors: dict[str, int]


def _cache_dir() -> Path:
    return Path(os.environ.get("KOP_CACHE_DIR") or "~/.cache/kop").expanduser()


def _pulsar_pid(data: Path) -> int | None:
    try:
        pid = int((data / "pulsar.pid").read_text().split()[0])
        Path(f"/proc/{pid}/status").stat()
        return pid
    except (OSError, ValueError, IndexError):
        return None


def _kop_metrics(admin_url: str) -> dict[str, float]:
    try:
        return scrape(f"{admin_url}/metrics")
    except OSError:
        return {}


class Sampler:
    def __init__(self, args: argparse.Namespace, kop_pid: int, kop_admin: str) -> None:
        self.args = args
        self.kop_pid = kop_pid
        self.kop_admin = kop_admin
        data = Path(args.pulsar_data)
        self.pulsar_pid = args.pulsar_pid or _pulsar_pid(data)
        self.subscribes = SubscribeCounter(data / "pulsar.log")
        if not self.subscribes.available:
            log(f"[soak] no broker log at {data / 'pulsar.log'}: subscriptions not counted")
        if self.pulsar_pid is None:
            log("[soak] Pulsar's pid unknown (--pulsar-pid): no forced-GC live heap")
        self.started = time.monotonic()
        self._last_t = self.started
        self._last_readers = pick(_kop_metrics(kop_admin), "kop_pulsar_readers_opened_total")
        self._next_live = self.started

    def sample(self, tally: Tally) -> Sample:
        now = time.monotonic()
        dt = max(1e-9, now - self._last_t)
        self._last_t = now
        live = None
        if self.pulsar_pid is not None and now >= self._next_live:
            live = live_heap_mib(self.pulsar_pid, self.args.http_url)
            self._next_live = now + self.args.live_every_s
        heap = pulsar_heap(self.args.http_url)
        kop = _kop_metrics(self.kop_admin)
        readers = pick(kop, "kop_pulsar_readers_opened_total")
        readers_rate = None
        if readers is not None and self._last_readers is not None:
            readers_rate = round((readers - self._last_readers) / dt, 2)
        self._last_readers = readers
        subs = self.subscribes.new() if self.subscribes.available else None
        counts, errors = tally.snapshot()
        return Sample(
            t_s=round(now - self.started, 1),
            heap_used_mib=heap.used_mib,
            heap_committed_mib=heap.committed_mib,
            old_after_gc_mib=heap.old_after_gc_mib,
            direct_mib=heap.direct_mib,
            live_mib=live,
            kop_rss_mib=rss_mib(self.kop_pid),
            kop_tail_buffers_mib=round((pick(kop, "kop_tail_buffer_bytes") or 0.0) / 2**20, 1),
            subscribes_per_s=None if subs is None else round(subs / dt, 2),
            kop_readers_per_s=readers_rate,
            pulsar_topics=heap.topics,
            pulsar_consumers=heap.consumers,
            kop_readers_open=pick(kop, "kop_pulsar_readers_open"),
            young_gcs=heap.young_gcs,
            full_gcs=heap.full_gcs,
            counts=counts,
            errors=errors,
        )


def _progress(s: Sample, prev: Sample | None) -> None:
    dt = s.t_s - (prev.t_s if prev else 0.0) or 1.0

    def rate(name: str) -> float:
        return (s.counts.get(name, 0) - (prev.counts.get(name, 0) if prev else 0)) / dt

    live = f"{s.live_mib:6.1f}" if s.live_mib is not None else "     -"
    subs = f"{s.subscribes_per_s:5.1f}/s" if s.subscribes_per_s is not None else "    -"
    log(
        f"[soak] {s.t_s / 60:5.1f} min  pulsar heap {s.heap_used_mib:6.1f} MiB "
        f"(old after GC {s.old_after_gc_mib:6.1f}, live {live}, direct {s.direct_mib:5.0f})"
        f"  kop rss {s.kop_rss_mib:6.1f} MiB"
        f" (tail buffers {s.kop_tail_buffers_mib:5.1f})"
        f"  reader subs {subs}  in {rate('bulk') + rate('trickled'):5.0f} rec/s"
        f"  out {rate('tail_records') + rate('group_records') + rate('history_records'):5.0f}"
        f" rec/s  seeks {rate('history_reads'):4.1f}/s  joins {s.counts.get('joins', 0)}"
        f"  churned {s.counts.get('topics_churned', 0)}  errors {sum(s.errors.values())}"
        f"  consumers on Pulsar {s.pulsar_consumers:.0f} (kop readers open "
        f"{s.kop_readers_open if s.kop_readers_open is None else int(s.kop_readers_open)})"
    )


def slope_mib_per_h(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, MiB) in MiB per hour."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    if var == 0:
        return None
    cov = sum((t - mx) * (v - my) for t, v in points)
    return round(cov / var * 3600, 1)


def summarize(samples: list[Sample], warmup_s: float) -> dict[str, Any]:
    live = [(s.t_s, s.live_mib) for s in samples if s.live_mib is not None]
    steady = [(t, v) for t, v in live if t >= warmup_s]
    old = [(s.t_s, s.old_after_gc_mib) for s in samples if s.t_s >= warmup_s]
    rss = [(s.t_s, s.kop_rss_mib) for s in samples if s.t_s >= warmup_s]
    subs = [s.subscribes_per_s for s in samples[1:] if s.subscribes_per_s is not None]
    mine = [s.kop_readers_per_s for s in samples[1:] if s.kop_readers_per_s is not None]
    last = samples[-1]
    return {
        "minutes": round(last.t_s / 60, 1),
        "live_first_mib": steady[0][1] if steady else None,
        "live_last_mib": steady[-1][1] if steady else None,
        "live_max_mib": max((v for _, v in live), default=None),
        "live_slope_mib_per_h": slope_mib_per_h(steady),
        "old_after_gc_slope_mib_per_h": slope_mib_per_h(old),
        "heap_used_max_mib": max(s.heap_used_mib for s in samples),
        "direct_max_mib": max(s.direct_mib for s in samples),
        "kop_rss_first_mib": rss[0][1] if rss else None,
        "kop_rss_last_mib": rss[-1][1] if rss else None,
        "kop_rss_slope_mib_per_h": slope_mib_per_h(rss),
        "subscribes_per_s": round(sum(subs) / len(subs), 2) if subs else None,
        "kop_readers_per_s": round(sum(mine) / len(mine), 2) if mine else None,
        "full_gcs_by_pulsar": last.full_gcs,
        "counts": last.counts,
        "errors": last.errors,
    }


def plot(doc: dict[str, Any], path: Path, before: dict[str, Any] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = doc["samples"]
    t = [s["t_s"] / 60 for s in samples]
    fig, (heap_ax, rss_ax, subs_ax) = plt.subplots(
        3, 1, figsize=(10, 8), sharex=True, gridspec_kw={"height_ratios": [2.2, 1, 1]}
    )
    if before is not None:
        _plot_before(before, heap_ax, rss_ax, subs_ax)
    heap_ax.plot(t, [s["heap_used_mib"] for s in samples], lw=0.6, color="#bbbbbb",
                 label="heap used (sampled)")  # fmt: skip
    heap_ax.plot(t, [s["old_after_gc_mib"] for s in samples], lw=1.2, color="#1f77b4",
                 label="G1 old gen after last GC")  # fmt: skip
    live = [(s["t_s"] / 60, s["live_mib"]) for s in samples if s["live_mib"] is not None]
    if live:
        heap_ax.plot([x for x, _ in live], [y for _, y in live], "o-", ms=3.5, lw=1.2,
                     color="#d62728", label="live heap after a forced full GC")  # fmt: skip
    heap_ax.plot(t, [s["direct_mib"] for s in samples], lw=0.8, ls="--", color="#9467bd",
                 label="direct memory used")  # fmt: skip
    heap_ax.axhline(doc["settings"]["heap_max_mib"], ls="--", lw=0.8, color="black",
                    label=f"-Xmx ({doc['settings']['heap_max_mib']:.0f} MiB)")  # fmt: skip
    heap_ax.set_ylabel("Pulsar heap, MiB")
    heap_ax.legend(fontsize=7, loc="upper left")
    heap_ax.set_ylim(bottom=0)
    rss_ax.plot(t, [s["kop_rss_mib"] for s in samples], color="#2ca02c", label="kop RSS")
    rss_ax.plot(t, [s["kop_tail_buffers_mib"] for s in samples], color="#2ca02c", lw=0.8,
                ls=":", label="of which tail buffers (budget 256 MiB)")  # fmt: skip
    rss_ax.legend(fontsize=7, loc="lower right")
    rss_ax.set_ylabel("kop, MiB")
    rss_ax.set_ylim(bottom=0)
    subs_ax.plot(t[1:], [s["subscribes_per_s"] or 0 for s in samples[1:]], color="#ff7f0e",
                 label="kop-reader subscribes/s (broker log)")  # fmt: skip
    subs_ax.set_ylabel("subscribes/s (log)")
    subs_ax.set_xlabel("minutes")
    subs_ax.set_yscale("log")
    subs_ax.legend(fontsize=7, loc="center right")
    s = doc["summary"]
    fig.suptitle(
        f"Pulsar heap over {s['minutes']} min of mixed clients through kop "
        f"({doc['kop_revision'].get('commit')}): live heap slope "
        f"{s['live_slope_mib_per_h']} MiB/h, {s['subscribes_per_s']} reader subscribes/s",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_before(before: dict[str, Any], heap_ax: Any, rss_ax: Any, subs_ax: Any) -> None:
    """An earlier run (another kop, another Pulsar setting) in grey behind this one."""
    samples = before["samples"]
    t = [s["t_s"] / 60 for s in samples]
    rev = before["kop_revision"].get("commit")
    live = [(s["t_s"] / 60, s["live_mib"]) for s in samples if s["live_mib"] is not None]
    heap_ax.plot([x for x, _ in live], [y for _, y in live], "s--", ms=3, lw=0.8,
                 color="#999999", label=f"live heap, kop {rev}")  # fmt: skip
    rss_ax.plot(t, [s["kop_rss_mib"] for s in samples], lw=0.8, ls="--", color="#999999",
                label=f"kop RSS, kop {rev}")  # fmt: skip
    subs_ax.plot(t[1:], [s["subscribes_per_s"] or 0 for s in samples[1:]], lw=0.8,
                 color="#999999", label=f"kop {rev}")  # fmt: skip


def markdown(doc: dict[str, Any]) -> str:
    s, st = doc["summary"], doc["settings"]
    rev = doc["kop_revision"].get("commit")
    rows = [
        "| what | value |",
        "|---|---:|",
        f"| duration | {s['minutes']} min |",
        f"| Pulsar `-Xmx` | {st['heap_max_mib']:.0f} MiB |",
        f"| live heap after forced full GC: first / last after warm-up | "
        f"{s['live_first_mib']} / {s['live_last_mib']} MiB |",
        f"| live heap: slope (least squares, after warm-up) | {s['live_slope_mib_per_h']} MiB/h |",
        f"| old gen after GC: slope | {s['old_after_gc_slope_mib_per_h']} MiB/h |",
        f"| heap used, highest sample | {s['heap_used_max_mib']} MiB |",
        f"| direct memory used, highest sample | {s['direct_max_mib']} MiB |",
        f"| kop RSS first / last (slope) | {s['kop_rss_first_mib']} / {s['kop_rss_last_mib']} MiB "
        f"({s['kop_rss_slope_mib_per_h']} MiB/h) |",
        f"| `kop-reader-*` subscribes (broker log) | {s['subscribes_per_s']} /s |",
        f"| readers kop opened (`kop_pulsar_readers_opened`) | {s['kop_readers_per_s']} /s |",
    ]
    idle = s.get("idle_partitions") or {}
    if idle.get("kib_per_partition") is not None:
        rows.append(
            f"| {st['idle_partitions']:,} idle partitions opened first: live heap "
            f"{idle['live_before_mib']} -> {idle['live_after_mib']} MiB | "
            f"{idle['kib_per_partition']} KiB each |"
        )
    c = s["counts"]
    idle_flag = f" --idle-partitions {st['idle_partitions']}" if st.get("idle_partitions") else ""
    return "\n".join(
        [
            BEGIN,
            f"Generated by `python -m bench.pulsar_soak --minutes {st['minutes']:g}{idle_flag}` on "
            f"{doc['date']} (kop `{rev}`, {doc['machine'].get('nproc')} cores): "
            f"{st['topics']} topics; {c.get('trickled', 0):,} records trickled one at a time "
            f"and {c.get('bulk', 0):,} in bulk; {c.get('history_reads', 0):,} seeks into "
            f"history; {c.get('joins', 0)} group joins; {c.get('topics_churned', 0)} topics "
            f"created and deleted; client errors: {sum(s['errors'].values())}. Warm-up "
            f"excluded from slopes: {st['warmup_s']:.0f} s.",
            "",
            *rows,
            "",
            f"![Pulsar heap over the soak]({PLOT.relative_to(DOC.parent).as_posix()})",
            END,
        ]
    )


def write_doc(section: str) -> None:
    text = DOC.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n## Pulsar's heap over a soak of mixed clients\n\n"
        text += section + "\n"
    DOC.write_text(text)


def _jvm_options(data: Path) -> list[str]:
    """Pulsar's heap, direct-memory and GC options, from its command line."""
    pid = _pulsar_pid(data)
    if pid is None:
        return []
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    wanted = ("-Xm", "-XX:MaxDirect", "-XX:+Use", "-XX:MaxGC", "-XX:+Exit")
    return [a for a in args if a.startswith(wanted)]


def _heap_max_mib(http_url: str) -> float:
    v = pick(scrape(f"{http_url}/metrics/"), "jvm_memory_bytes_max", area="heap")
    return round((v or 0.0) / 2**20, 1)


def _open_idle(clients: Clients, args: argparse.Namespace) -> dict[str, Any]:
    """Opens the idle partitions; Pulsar's live heap before and after says what one
    open partition costs it (kop's producer, tail reader and Pulsar's own state)."""
    pid = args.pulsar_pid or _pulsar_pid(Path(args.pulsar_data))
    before = live_heap_mib(pid, args.http_url) if pid else None
    clients.open_idle()
    after = live_heap_mib(pid, args.http_url) if pid else None
    per = None
    if before is not None and after is not None:
        per = round((after - before) * 1024 / args.idle_partitions, 1)
    log(f"[soak] live heap {before} -> {after} MiB: {per} KiB per open partition")
    return {"live_before_mib": before, "live_after_mib": after, "kib_per_partition": per}


def run(args: argparse.Namespace) -> dict[str, Any]:
    if not pulsar_healthy(args.http_url):
        raise SystemExit(f"Pulsar is not healthy at {args.http_url}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    # Taken now: the kop that runs is the code as it is when it starts.
    revision = {"commit": args.kop_label} if args.kop_label else report.kop_revision(args.kop_dir)
    kop: KopProcess | None = None
    if args.bootstrap:
        bootstrap, kop_admin, kop_pid = args.bootstrap, args.kop_admin, args.kop_pid
        if not (kop_admin and kop_pid):
            raise SystemExit("--bootstrap needs --kop-admin and --kop-pid")
    else:
        admin_port = free_port()
        config = Path(tempfile.mkdtemp()) / "kop.toml"
        config.write_text("")
        kop = KopProcess(
            RESULTS / f"pulsar-soak-{stamp}-kop.log",
            pulsar_url=args.pulsar_url,
            http_url=args.http_url,
            extra_args=["--admin-port", str(admin_port), "--config", str(config)],
            checkout=args.kop_dir,
        )
        kop.start()
        bootstrap, kop_admin, kop_pid = kop.bootstrap, f"http://127.0.0.1:{admin_port}", kop.pid
        log(f"[soak] kop pid {kop_pid} on {bootstrap}, log {kop.log_path}")
    mix = Mix(
        topics=args.topics,
        trickle_per_s=args.trickle_per_s,
        bulk_per_s=args.bulk_per_s,
        idle_partitions=args.idle_partitions,
    )
    tally = Tally()
    clients = Clients(bootstrap, mix, tally)
    samples: list[Sample] = []
    scale: dict[str, Any] = {}
    try:
        clients.prepare()
        if args.idle_partitions:
            scale = _open_idle(clients, args)
        sampler = Sampler(args, kop_pid, kop_admin)
        if args.histograms and sampler.pulsar_pid:
            class_histogram(sampler.pulsar_pid, RESULTS / f"pulsar-soak-{stamp}-histo-start.txt")
        clients.start()
        deadline = time.monotonic() + args.minutes * 60
        samples.append(sampler.sample(tally))
        _progress(samples[-1], None)
        while time.monotonic() < deadline:
            time.sleep(min(args.sample_s, max(0.0, deadline - time.monotonic())))
            samples.append(sampler.sample(tally))
            _progress(samples[-1], samples[-2])
        clients.join()
        if args.histograms and sampler.pulsar_pid:
            class_histogram(sampler.pulsar_pid, RESULTS / f"pulsar-soak-{stamp}-histo-end.txt")
    finally:
        clients.join()
        if kop is not None:
            code = kop.stop()
            if code not in (0, None):
                log(f"[soak] warning: kop exited with {code}; see {kop.log_path}")
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    settings["jvm_options"] = _jvm_options(Path(args.pulsar_data))
    settings["heap_max_mib"] = _heap_max_mib(args.http_url)
    doc = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": report.machine(),
        "kop_revision": revision,
        "settings": settings,
        "summary": {**summarize(samples, args.warmup_s), "idle_partitions": scale},
        "samples": [asdict(s) for s in samples],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"pulsar-soak-{stamp}.json"
    out.write_text(json.dumps(doc, indent=2) + "\n")
    log(f"[soak] samples in {out}")
    return doc


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--topics", type=int, default=400)
    p.add_argument("--trickle-per-s", type=float, default=40.0)
    p.add_argument("--bulk-per-s", type=float, default=1000.0)
    p.add_argument("--sample-s", type=float, default=30.0)
    p.add_argument("--live-every-s", type=float, default=300.0,
                   help="seconds between forced full GCs of Pulsar (jcmd GC.run)")  # fmt: skip
    p.add_argument("--warmup-s", type=float, default=300.0, help="left out of the slopes")
    p.add_argument("--pulsar-url", default="pulsar://localhost:6650")
    p.add_argument("--http-url", default="http://localhost:8080")
    data = os.environ.get("KOP_PULSAR_DATA") or str(_cache_dir() / "pulsar-data")
    p.add_argument("--pulsar-data", default=data, help="tools/pulsar.py's data dir")
    p.add_argument("--pulsar-pid", type=int, default=None)
    p.add_argument("--idle-partitions", type=int, default=0,
                   help="partitions opened once and then only followed")  # fmt: skip
    p.add_argument("--kop-dir", type=Path, default=REPO,
                   help="run the kop of this checkout (an older one: `git archive`)")  # fmt: skip
    p.add_argument("--kop-label", help="what to call that kop (default: its git commit)")
    p.add_argument("--compare", type=Path,
                   help="a results JSON of an earlier run, drawn behind this one")  # fmt: skip
    p.add_argument("--bootstrap", help="use this running kop instead of starting one")
    p.add_argument("--kop-admin", help="its admin HTTP base URL (with --bootstrap)")
    p.add_argument("--kop-pid", type=int, help="its pid (with --bootstrap)")
    p.add_argument("--histograms", action="store_true",
                   help="Pulsar's class histograms (start, end) into bench/results")  # fmt: skip
    p.add_argument("--max-live-slope", type=float, default=None,
                   help="exit 1 if the live heap grows faster (MiB/h; make soak)")  # fmt: skip
    p.add_argument("--replot", type=Path,
                   help="no run: the plot (and --write) from this results JSON")  # fmt: skip
    p.add_argument("--plot", type=Path, default=PLOT)
    p.add_argument("--write", action="store_true", help="the summary into docs/benchmarks.md")
    args = p.parse_args(argv)
    doc = json.loads(args.replot.read_text()) if args.replot else run(args)
    s = doc["summary"]
    log(
        f"[soak] done: {s['minutes']} min; live heap {s['live_first_mib']} -> "
        f"{s['live_last_mib']} MiB (slope {s['live_slope_mib_per_h']} MiB/h); kop rss "
        f"{s['kop_rss_first_mib']} -> {s['kop_rss_last_mib']} MiB; reader subscribes "
        f"{s['subscribes_per_s']}/s; errors {s['errors']}"
    )
    before = json.loads(args.compare.read_text()) if args.compare else None
    try:
        plot(doc, args.plot, before)
        log(f"[soak] plot in {args.plot}")
    except ImportError:
        log("[soak] matplotlib not installed: no plot")
    if args.write:
        write_doc(markdown(doc))
        log(f"[soak] summary written into {DOC}")
    print(json.dumps(s, indent=2))
    slope = s["live_slope_mib_per_h"]
    if args.max_live_slope is not None and (slope is None or slope > args.max_live_slope):
        log(f"[soak] FAILED: live heap slope {slope} MiB/h, allowed {args.max_live_slope}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
