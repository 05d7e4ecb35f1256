"""Tiny timing helper shared by the codec_eval benchmarks.

Each measurement calibrates an inner loop count so one repeat takes about
``target`` seconds, runs ``repeats`` repeats and reports the median per-op time.
GC stays enabled (a server runs with it on).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

# Global knobs, adjusted by run.py (--quick).
TARGET_S = 0.08
REPEATS = 5


@dataclass(frozen=True)
class Result:
    per_op_s: float
    spread: float  # (max-min)/median of the repeats

    @property
    def ops(self) -> float:
        return 1.0 / self.per_op_s


def measure(fn: Callable[[], object]) -> Result:
    fn()  # warm up (codegen caches, imports, lazy C init)
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= TARGET_S / 4 or n >= 1 << 20:
            break
        n *= 4
    n = max(1, int(n * TARGET_S / max(dt, 1e-9)))
    samples = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    med = statistics.median(samples)
    return Result(med, (max(samples) - min(samples)) / med)


def fmt_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.1f}"


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"]
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        out.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
    return "\n".join(out)


def machine_line() -> str:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores, {cpu}, {platform.python_implementation()} "
        f"{platform.python_version()} on {platform.system()} {platform.machine()}"
    )
