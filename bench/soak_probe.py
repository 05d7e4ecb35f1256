"""What `bench.pulsar_soak` samples: Pulsar's heap, kop's resident set, and the
reader subscriptions kop creates on the broker.

Heap "used" rises and falls with every young collection, so it says little about
a leak. Two after-GC figures do: the G1 old generation as the last collection
left it (Prometheus' collection usage), and, every `live_every_s`, the live heap
after a full collection forced with `jcmd GC.run` (what a leak cannot hide from).
"""

from __future__ import annotations

import re
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MIB = 2**20
_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
# One line per subscribe request the broker receives (see ServerCnx.handleSubscribe).
_SUBSCRIBE = re.compile(rb"Subscribing on topic \S+ / kop-reader-")


def scrape(url: str, timeout_s: float = 10.0) -> dict[str, float]:
    """A Prometheus text page as {name{labels}: value}."""
    with urllib.request.urlopen(url, timeout=timeout_s) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is not None:
            try:
                out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
            except ValueError:
                continue
    return out


def pick(metrics: dict[str, float], name: str, **labels: str) -> float | None:
    """The first series of `name` whose labels include `labels`."""
    want = [f'{k}="{v}"' for k, v in labels.items()]
    for key, value in metrics.items():
        if (key == name or key.startswith(name + "{")) and all(w in key for w in want):
            return value
    return None


@dataclass
class PulsarHeap:
    used_mib: float
    committed_mib: float
    old_after_gc_mib: float  # G1 old gen as the last collection that touched it left it
    direct_mib: float  # netty and the caches; past -XX:MaxDirectMemorySize, Pulsar's
    # allocator falls back to the heap (pulsar.allocator.out_of_memory_policy)
    young_gcs: float
    full_gcs: float
    topics: float
    consumers: float  # on every topic: kop's open readers, if nothing is left open


def total(metrics: dict[str, float], name: str) -> float:
    """The sum of every series of `name` (per-topic metrics summed)."""
    return sum(v for k, v in metrics.items() if k.startswith(name + "{"))


def pulsar_heap(http_url: str) -> PulsarHeap:
    m = scrape(f"{http_url}/metrics/")

    def mib(v: float | None) -> float:
        return round((v or 0.0) / MIB, 1)

    return PulsarHeap(
        used_mib=mib(pick(m, "jvm_memory_bytes_used", area="heap")),
        committed_mib=mib(pick(m, "jvm_memory_bytes_committed", area="heap")),
        old_after_gc_mib=mib(pick(m, "jvm_memory_pool_collection_used_bytes", pool="G1 Old Gen")),
        direct_mib=mib(pick(m, "jvm_memory_direct_bytes_used")),
        young_gcs=pick(m, "jvm_gc_collection_seconds_count", gc="G1 Young Generation") or 0.0,
        full_gcs=pick(m, "jvm_gc_collection_seconds_count", gc="G1 Old Generation") or 0.0,
        topics=pick(m, "pulsar_broker_topics_count") or 0.0,
        consumers=total(m, "pulsar_consumers_count"),
    )


def live_heap_mib(pid: int, http_url: str) -> float | None:
    """Heap used right after a full collection (`jcmd <pid> GC.run`)."""
    done = subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=120)
    if done.returncode != 0:
        return None
    time.sleep(0.5)
    heap = pick(scrape(f"{http_url}/metrics/"), "jvm_memory_bytes_used", area="heap")
    return None if heap is None else round(heap / MIB, 1)


def class_histogram(pid: int, path: Path, top: int = 400) -> None:
    """The `top` classes by live bytes (forces a full collection), for diagnosis."""
    done = subprocess.run(
        ["jcmd", str(pid), "GC.class_histogram"], capture_output=True, text=True, timeout=300
    )
    path.write_text("\n".join(done.stdout.splitlines()[: top + 3]) + "\n")


class SubscribeCounter:
    """Counts the broker's `Subscribing on topic ... / kop-reader-*` lines appended to
    its log since the last call (the log is read from where the last call stopped)."""

    def __init__(self, log_path: Path | None) -> None:
        self._path = log_path
        self._offset = log_path.stat().st_size if log_path and log_path.exists() else 0
        self._partial = b""

    @property
    def available(self) -> bool:
        return self._path is not None and self._path.exists()

    def new(self) -> int:
        if not self.available:
            return 0
        assert self._path is not None
        with self._path.open("rb") as f:
            size = f.seek(0, 2)
            if size < self._offset:  # the log was moved aside: a new one
                self._offset = 0
            f.seek(self._offset)
            chunk = self._partial + f.read()
        self._offset = size
        cut = chunk.rfind(b"\n") + 1
        self._partial = chunk[cut:]
        return len(_SUBSCRIBE.findall(chunk[:cut]))
