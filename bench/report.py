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

TARGETS = ("native", "native(java)", "native e2e", "kop(kafka)", "kop(pulsar)")
FORMATS = ("kafka", "pulsar")
_LABELS = {"native": "native (Python client)", "native(java)": "native (Java client)",
           "kop(kafka)": "kop, kafka entries", "kop(pulsar)": "kop, pulsar entries"}  # fmt: skip


def find(results: list[PhaseResult], target: str, phase: str) -> PhaseResult | None:
    for r in results:
        if r.target == target and r.phase == phase:
            return r
    return None


def ratio(results: list[PhaseResult], fmt: str, phase: str, base: str = "native") -> float:
    """kop/`base`: throughput ratio (higher is better) or p50 ratio for latency."""
    kop, native = find(results, f"kop({fmt})", phase), find(results, base, phase)
    if kop is None or native is None:
        return math.nan
    if phase == "latency":
        a, b = kop.percentile(50), native.percentile(50)
    else:
        a, b = kop.mb_s, native.mb_s
    return a / b if b > 0 and not math.isnan(a) else math.nan


def table(results: list[PhaseResult]) -> str:
    """A markdown table, one row per (phase, target)."""
    head = (
        "| phase | target | records | MB/s | records/s | p50 ms | p99 ms | kop/native "
        "| kop/java | errors | CPU cores client/kop/pulsar |"
    )
    lines = [head, "|---|---|" + "---:|" * 8 + "---|"]
    for phase in ("produce", "consume", "latency"):
        for target in TARGETS:
            r = find(results, target, phase)
            if r is None:
                continue
            rat = jrat = ""
            if target.startswith("kop("):
                rat = _fmt(ratio(results, target[4:-1], phase))
                jrat = _fmt(ratio(results, target[4:-1], phase, "native(java)"))
            if phase == "latency":
                mb = rs = ""
                p50, p99 = f"{r.percentile(50):.2f}", f"{r.percentile(99):.2f}"
            else:
                mb, rs, p50, p99 = f"{r.mb_s:.1f}", f"{r.rec_s:,.0f}", "", ""
            cpu = "/".join(f"{r.cpu.get(k, 0):.2f}" if k in r.cpu else "-"
                           for k in ("client", "kop", "pulsar"))  # fmt: skip
            errors = str(r.errors) + (f" ({r.note})" if r.note else "")
            lines.append(
                f"| {phase} | {target} | {r.records:,} | {mb} | {rs} | {p50} | {p99} | {rat} "
                f"| {jrat} | {errors} | {cpu} |"
            )
    return "\n".join(lines)


def _fmt(x: float) -> str:
    return "" if math.isnan(x) else f"{x:.2f}"


def ratio_line(results: list[PhaseResult], base: str = "native") -> str:
    parts = " ".join(f"{fmt}={ratio(results, fmt, 'produce', base):.2f}" for fmt in FORMATS)
    name = "native" if base == "native" else base.replace("native(", "").rstrip(")") + "-native"
    return f"ratio kop/{name} produce: {parts}"


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

    fig, (ax, lax) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [2, 1.2]})
    colors = {"kop(kafka)": "#1f77b4", "kop(pulsar)": "#ff7f0e", "native": "#2ca02c",
              "native(java)": "#98df8a", "native e2e": "#7f7f7f"}  # fmt: skip
    order = [t for t in ("kop(kafka)", "kop(pulsar)", "native", "native(java)")
             if find(results, t, "produce") is not None]  # fmt: skip
    width = 0.8 / max(1, len(order))
    for j, phase in enumerate(("produce", "consume")):
        for i, target in enumerate(order):
            r = find(results, target, phase)
            v = r.mb_s if r else 0.0
            x = j + (i - (len(order) - 1) / 2) * width
            label = _LABELS.get(target, target) if j == 0 else None
            ax.bar(x, v, width, color=colors[target], label=label)
            ax.text(x, v, f"{v:.0f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks([0, 1], ["produce", "consume"])
    ax.set_ylabel("MB/s (key+value, 10^6 B)")
    ax.set_title("throughput, 1 partition, 1 KiB values")
    ax.legend(fontsize=8)
    lat_order = [t for t in (*order, "native e2e") if find(results, t, "latency") is not None]
    for i, target in enumerate(lat_order):
        r = find(results, target, "latency")
        if r is None or not r.latencies_ms:
            continue
        for k, (q, hatch) in enumerate(((50, ""), (99, "//"))):
            v = r.percentile(q)
            x = i + (k - 0.5) * 0.38
            lax.bar(x, v, 0.38, color=colors[target], hatch=hatch, edgecolor="white")
            lax.text(x, v, f"{v:.1f}", ha="center", va="bottom", fontsize=8)
    lax.set_xticks(range(len(lat_order)), [t.replace(" ", "\n") for t in lat_order], fontsize=7)
    lax.set_ylabel("ms")
    lax.set_title("produce latency p50 / p99 (hatched)")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
