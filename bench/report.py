"""Turning phase results into the table, the ratio line, JSON and the plot."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import PhaseResult
from bench.refkafka import kafka_version

TARGETS = (
    "native",
    "native(java)",
    "native e2e",
    "native(java) e2e",
    "refkafka",
    "kop(kafka)",
    "kop(pulsar)",
)
FORMATS = ("kafka", "pulsar")
PHASES = (
    "produce",
    "produce-idempotent",
    "consume",
    "latency",
    "perf-produce",
    "perf-consume",
    "latency-loaded",
)
BASES = ("native", "native(java)", "refkafka")
_LABELS = {"native": "native (Python client)", "native(java)": "native (Java client)",
           "refkafka": "Kafka (reference)", "kop(kafka)": "kop, kafka entries",
           "kop(pulsar)": "kop, pulsar entries"}  # fmt: skip
CPU_KEYS = ("client", "kop", "pulsar", "kafka")


def find(results: list[PhaseResult], target: str, phase: str) -> PhaseResult | None:
    for r in results:
        if r.target == target and r.phase == phase:
            return r
    return None


def _base_phase(base: str, phase: str) -> str:
    """Native Pulsar has no idempotent producer (the broker de-duplicates every producer
    in kop's namespaces), so kop's idempotent row is compared with its plain produce."""
    if base != "refkafka" and phase == "produce-idempotent":
        return "produce"
    return phase


def ratio(
    results: list[PhaseResult], fmt: str, phase: str, base: str = "native", q: float = 50
) -> float:
    """kop/`base`: throughput ratio (higher is better), or for latency the ratio of the
    q-th percentiles (lower is better)."""
    kop, other = find(results, f"kop({fmt})", phase), find(results, base, _base_phase(base, phase))
    if kop is None or other is None or kop.records == 0:
        return math.nan
    if phase.startswith("latency"):
        a, b = kop.latency(q), other.latency(q)
    else:
        a, b = kop.rec_s, other.rec_s  # same record size within a phase: = the MB/s ratio
    return a / b if b > 0 and not math.isnan(a) else math.nan


def ratios(results: list[PhaseResult]) -> dict[str, dict[str, dict[str, float | None]]]:
    """{base: {phase: {fmt: kop/base}}}; latency phases compare p50, and p99 under
    "<phase>_p99"."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for base in BASES:
        per: dict[str, dict[str, float | None]] = {}
        for phase in PHASES:
            latency = phase.startswith("latency")
            qs = ((phase, 50), (f"{phase}_p99", 99)) if latency else ((phase, 50),)
            for key, q in qs:
                vals = {f: _num(ratio(results, f, phase, base, q)) for f in FORMATS}
                if any(v is not None for v in vals.values()):
                    per[key] = vals
        if per:
            out[base] = per
    return out


def _num(x: float, digits: int = 3) -> float | None:
    return None if math.isnan(x) else round(x, digits)


def table(results: list[PhaseResult]) -> str:
    """A markdown table, one row per (phase, target). Ratio cells on latency rows are
    p50/p99; the CPU column is cores per process during the phase."""
    head = (
        "| phase | target | records | MB/s | records/s | p50 ms | p99 ms | kop/native "
        "| kop/java | kop/kafka | errors | CPU cores client/kop/pulsar/kafka |"
    )
    lines = [head, "|---|---|" + "---:|" * 9 + "---|"]
    for phase in PHASES:
        for target in TARGETS:
            r = find(results, target, phase)
            if r is None:
                continue
            cells = ["", "", ""]
            if target.startswith("kop("):
                fmt = target[4:-1]
                for i, base in enumerate(BASES):
                    if phase.startswith("latency"):
                        a = ratio(results, fmt, phase, base)
                        b = ratio(results, fmt, phase, base, 99)
                        cells[i] = f"{_fmt(a)}/{_fmt(b)}" if not math.isnan(a) else ""
                    else:
                        cells[i] = _fmt(ratio(results, fmt, phase, base))
            if phase.startswith("latency") or "p50_ms" in r.stats:
                p50, p99 = f"{r.latency(50):.2f}", f"{r.latency(99):.2f}"
            else:
                p50 = p99 = ""
            mb, rs = ("", "") if phase == "latency" else (f"{r.mb_s:.1f}", f"{r.rec_s:,.0f}")
            cpu = "/".join(f"{r.cpu[k]:.2f}" if k in r.cpu else "-" for k in CPU_KEYS)
            errors = str(r.errors) + (f" ({r.note})" if r.note else "")
            lines.append(
                f"| {phase} | {target} | {r.records:,} | {mb} | {rs} | {p50} | {p99} "
                f"| {' | '.join(cells)} | {errors} | {cpu} |"
            )
    return "\n".join(lines)


# (row label, phase, metric): metric is mb_s, rec_s, p50, p99 or avg (ms, from the tool)
SUMMARY_ROWS = (
    ("produce MB/s", "produce", "mb_s"),
    ("produce, idempotent MB/s", "produce-idempotent", "mb_s"),
    ("consume MB/s", "consume", "mb_s"),
    ("latency p50 ms", "latency", "p50"),
    ("latency p99 ms", "latency", "p99"),
    ("perf-test produce records/s", "perf-produce", "rec_s"),
    ("perf-test produce avg ms", "perf-produce", "avg"),
    ("perf-test produce p99 ms", "perf-produce", "p99"),
    ("perf-test consume records/s", "perf-consume", "rec_s"),
    ("p99 ms at half of peak", "latency-loaded", "p99"),
)
SUMMARY_TARGETS = ("native", "native(java)", "refkafka", "kop(kafka)", "kop(pulsar)")


def _metric(r: PhaseResult | None, metric: str) -> float:
    if r is None or (r.records == 0 and metric in ("mb_s", "rec_s")):
        return math.nan
    if metric == "mb_s":
        return r.mb_s
    if metric == "rec_s":
        return r.rec_s
    if metric == "avg":
        return r.stats.get("avg_ms", math.nan)
    return r.latency(float(metric[1:]))


def summary(results: list[PhaseResult]) -> dict[str, dict[str, float | None]]:
    """{row label: {target: value}}, plus "kop(fmt)/native" and "kop(fmt)/refkafka" ratios
    (for latency rows: kop's milliseconds over the base's, lower is better)."""
    out: dict[str, dict[str, float | None]] = {}
    for label, phase, metric in SUMMARY_ROWS:
        row: dict[str, float | None] = {}
        for t in SUMMARY_TARGETS:
            row[t] = _num(_metric(find(results, t, phase), metric), 2)
        for fmt in FORMATS:
            kop = _metric(find(results, f"kop({fmt})", phase), metric)
            for base in ("native", "refkafka"):
                b = _metric(find(results, base, _base_phase(base, phase)), metric)
                if phase.startswith("perf") and base == "native":
                    b = math.nan  # the perf tools speak only the Kafka protocol
                row[f"kop({fmt})/{base}"] = _num(kop / b if b > 0 else math.nan, 2)
        if any(v is not None for v in row.values()):
            out[label] = row
    return out


def summary_table(results: list[PhaseResult], kafka_version: str = "") -> str:
    """The headline figures, one column per target (Kafka's included), then the ratios
    kop/native Pulsar (Python client) and kop/Kafka as `kafka entries, pulsar entries`."""
    data = summary(results)
    kafka = f"Kafka {kafka_version}".strip()
    head = ("| | native Python | native Java | " + kafka + " | kop kafka | kop pulsar "
            "| kop/native (kafka, pulsar) | kop/Kafka (kafka, pulsar) |")  # fmt: skip
    lines = [head, "|---|" + "---:|" * 7]

    def cell(v: float | None, digits: int) -> str:
        if v is None:
            return ""
        return f"{v:,.0f}" if digits == 0 else f"{v:.{digits}f}"

    for label, row in data.items():
        digits = 0 if "records/s" in label else (1 if "MB/s" in label else 2)
        vals = [cell(row[t], digits) for t in SUMMARY_TARGETS]
        pairs = []
        for base in ("native", "refkafka"):
            a, b = row[f"kop(kafka)/{base}"], row[f"kop(pulsar)/{base}"]
            both = f"{cell(a, 2) or '-'}, {cell(b, 2) or '-'}"
            pairs.append("" if a is None and b is None else both)
        lines.append(f"| {label} | {' | '.join(vals)} | {pairs[0]} | {pairs[1]} |")
    return "\n".join(lines)


def _fmt(x: float) -> str:
    return "" if math.isnan(x) else f"{x:.2f}"


def ratio_line(results: list[PhaseResult], base: str = "native", extended: bool = False) -> str:
    """`ratio kop/native produce: kafka=X.XX pulsar=Y.YY`; `extended` appends kop's
    idempotent produce over the same base, and kop/Kafka for plain and idempotent produce."""

    def parts(phase: str, b: str) -> str:
        return " ".join(f"{fmt}={ratio(results, fmt, phase, b):.2f}" for fmt in FORMATS)

    name = "native" if base == "native" else base.replace("native(", "").rstrip(")") + "-native"
    line = f"ratio kop/{name} produce: {parts('produce', base)}"
    if extended:
        line += f" idempotent: {parts('produce-idempotent', base)}"
        line += f" | kop/kafka produce: {parts('produce', 'refkafka')}"
        line += f" idempotent: {parts('produce-idempotent', 'refkafka')}"
    return line


def machine() -> dict[str, Any]:
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "ram_gib": round(mem_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def versions(http_url: str) -> dict[str, str]:
    import confluent_kafka
    import pulsar

    out = {
        "confluent-kafka": getattr(confluent_kafka, "__version__", "?"),
        "librdkafka": confluent_kafka.libversion()[0],
        "pulsar-client": getattr(pulsar, "__version__", "?"),
        "kafka-broker": kafka_version(),
    }
    try:
        with urllib.request.urlopen(f"{http_url}/admin/v2/brokers/version", timeout=10) as resp:
            out["pulsar-broker"] = resp.read().decode().strip().strip('"')
    except OSError:
        out["pulsar-broker"] = "?"
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        out["java"] = (java.stderr.splitlines() or ["?"])[0]
    except (OSError, subprocess.TimeoutExpired):
        out["java"] = "-"
    return out


PULSAR_SETTINGS = ("managedLedgerNewEntriesCheckDelayInMillis", "brokerDeduplicationEnabled",
                   "managedLedgerCacheSizeMB")  # fmt: skip


def pulsar_settings(http_url: str) -> dict[str, Any]:
    """Broker settings in effect that the numbers depend on (from the running broker)."""
    try:
        url = f"{http_url}/admin/v2/brokers/configuration/runtime"
        with urllib.request.urlopen(url, timeout=10) as resp:
            runtime = json.loads(resp.read())
    except (OSError, ValueError):
        return {}
    return {k: runtime.get(k) for k in PULSAR_SETTINGS}


def kop_revision(repo: Path) -> dict[str, Any]:
    """The kop commit measured, and whether kop/ had uncommitted changes (read-only git)."""

    def git(*args: str) -> str:
        try:
            out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                                 timeout=10)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return out.stdout.strip() if out.returncode == 0 else ""

    return {"commit": git("rev-parse", "--short", "HEAD") or "?",
            "kop_dirty": bool(git("status", "--porcelain", "--", "kop"))}  # fmt: skip


def write_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)


def plot(results: list[PhaseResult], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    has_loaded = any(r.phase == "latency-loaded" for r in results)
    widths = [2.6, 1.3, 1.0] if has_loaded else [2.6, 1.3]
    fig, axes = plt.subplots(
        1, len(widths), figsize=(12.5 + 3.5 * has_loaded, 4.6),
        gridspec_kw={"width_ratios": widths},
    )  # fmt: skip
    ax, lax = axes[0], axes[1]
    loaded = axes[2] if has_loaded else None
    colors = {"kop(kafka)": "#1f77b4", "kop(pulsar)": "#ff7f0e", "native": "#2ca02c",
              "native(java)": "#98df8a", "refkafka": "#9467bd",
              "native e2e": "#7f7f7f", "native(java) e2e": "#bcbd22"}  # fmt: skip
    order = [t for t in ("kop(kafka)", "kop(pulsar)", "refkafka", "native", "native(java)")
             if any(r.target == t for r in results)]  # fmt: skip
    groups = [g for g in ("produce", "produce-idempotent", "consume", "perf-produce",
                          "perf-consume") if any(r.phase == g for r in results)]  # fmt: skip
    width = 0.8 / max(1, len(order))
    labelled: set[str] = set()
    for j, phase in enumerate(groups):
        for i, target in enumerate(order):
            r = find(results, target, phase)
            if r is None:
                continue
            v = r.mb_s
            x = j + (i - (len(order) - 1) / 2) * width
            label = None if target in labelled else _LABELS.get(target, target)
            labelled.add(target)
            ax.bar(x, v, width, color=colors[target], label=label)
            ax.text(x, v, f"{v:.0f}", ha="center", va="bottom", fontsize=7)
    names = {"produce-idempotent": "produce\nidempotent",
             "perf-produce": "perf-test\nproduce (Java)",
             "perf-consume": "perf-test\nconsume (Java)"}  # fmt: skip
    ax.set_xticks(range(len(groups)), [names.get(g, g) for g in groups], fontsize=8)
    ax.set_ylabel("MB/s (10^6 B; perf-test: values only)")
    ax.set_title("throughput, 1 partition, 1 KiB values", fontsize=9)
    ax.legend(fontsize=7)
    _latency_bars(lax, results, "latency", [*order, "native e2e"], colors,
                  "produce latency p50 / p99 (hatched), one at a time")  # fmt: skip
    if loaded is not None:
        _latency_bars(loaded, results, "latency-loaded", [*order, "native(java) e2e"], colors,
                      "p50 / p99 (hatched) at half of peak")  # fmt: skip
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _latency_bars(
    ax: Any, results: list[PhaseResult], phase: str, targets: list[str],
    colors: dict[str, str], title: str,
) -> None:  # fmt: skip
    """p50 and p99 (hatched) side by side for each target that ran `phase`."""
    shown = [t for t in targets if (r := find(results, t, phase)) is not None and r.latencies_ms]
    for i, target in enumerate(shown):
        r = find(results, target, phase)
        assert r is not None
        for k, (q, hatch) in enumerate(((50, ""), (99, "//"))):
            v = r.percentile(q)
            x = i + (k - 0.5) * 0.38
            ax.bar(x, v, 0.38, color=colors[target], hatch=hatch, edgecolor="white")
            ax.text(x, v, f"{v:.1f}", ha="center", va="bottom", fontsize=7)
    short = {"refkafka": "Kafka\n(ref)"}
    ax.set_xticks(range(len(shown)), [short.get(t, t.replace(" ", "\n").replace("(", "\n("))
                                      for t in shown], fontsize=7)  # fmt: skip
    ax.set_ylabel("ms")
    ax.set_title(title, fontsize=9)


def added_p99(results: list[PhaseResult], fmt: str) -> float:
    """kop's p99 produce latency at half of peak minus the Java client's end-to-end p99
    at the same load (ms): what kop adds to Pulsar (issue 9 asks for <= 2 ms)."""
    kop = find(results, f"kop({fmt})", "latency-loaded")
    native = find(results, "native(java) e2e", "latency-loaded")
    if kop is None or native is None:
        return math.nan
    return kop.latency(99) - native.latency(99)


def loaded_line(results: list[PhaseResult]) -> str:
    """`added p99 at half of peak (R rec/s) over native Java e2e p99 X ms: kafka=+a
    pulsar=+b ms`."""
    native = find(results, "native(java) e2e", "latency-loaded")
    assert native is not None
    parts = " ".join(f"{fmt}={added_p99(results, fmt):+.2f}" for fmt in FORMATS)
    return (
        f"added p99 produce latency at half of peak ({native.note}) over native Java "
        f"e2e p99 {native.latency(99):.2f} ms: {parts} ms"
    )
