"""The client side of `bench.compacted`: keyed writes, and one read from offset 0
that checks what it gets and samples the server's memory meanwhile.

The same code runs against kop and the reference Kafka (confluent-kafka, the same
settings), so the two rows of a pair differ only in the server.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import Progress, Rates, Values
from bench.kafka_side import wait_ready

client_log = logging.getLogger("bench.librdkafka")
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class KeyedWorkload:
    """`records` writes over `keys` keys, each key written `records // keys` times (the
    rest once more) in a seeded random order; record i carries `values[i]`."""

    records: int
    keys: int
    value_bytes: int = 1024
    key_bytes: int = 16
    seed: int = 20

    def key_of(self) -> list[int]:
        order = [i % self.keys for i in range(self.records)]
        random.Random(self.seed).shuffle(order)
        return order

    def key(self, k: int) -> bytes:
        return f"{k:0{self.key_bytes}d}".encode()

    @property
    def record_bytes(self) -> int:
        return self.key_bytes + self.value_bytes


@dataclass(frozen=True)
class Expected:
    """What a reader of the log must find: every record (the whole log) or the last
    write of every key at its original offset (the compacted view)."""

    last: dict[bytes, int]  # key -> offset of its last write
    records: int

    @staticmethod
    def of(w: KeyedWorkload) -> Expected:
        key_of = w.key_of()
        return Expected({w.key(k): i for i, k in enumerate(key_of)}, w.records)


def create_topic(bootstrap: str, name: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(name, 1, 1, config=configs)], request_timeout=60)[name]
    try:
        fut.result(60)
    except KafkaException as exc:
        raise RuntimeError(f"create topic {name}: {exc}") from exc
    wait_ready(bootstrap, [name])


def delete_topics(bootstrap: str, names: list[str]) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    failed = []
    for name, fut in admin.delete_topics(names, request_timeout=60).items():
        try:
            fut.result(60)
        except KafkaException as exc:
            failed.append(f"{name}: {exc}")
    return failed


def produce(bootstrap: str, topic: str, w: KeyedWorkload, values: Values, label: str) -> float:
    """Write the workload in order (acks=all, 5 ms linger, 256 KiB batches); seconds."""
    errors: list[Any] = []
    p = Producer({
        "bootstrap.servers": bootstrap, "logger": client_log, "acks": "all", "linger.ms": 5,
        "batch.size": 256 * 1024, "compression.type": "none",
        "enable.idempotence": True,  # the log in write order, so the last write wins
        "queue.buffering.max.messages": 20_000, "delivery.report.only.error": True,
        "on_delivery": lambda err, _m: errors.append(err) if err is not None else None,
    })  # fmt: skip
    p.list_topics(topic, timeout=30)
    prog = Progress(label, w.records, w.record_bytes)
    start = time.perf_counter()
    for i, k in enumerate(w.key_of()):
        while True:
            try:
                p.produce(topic, values[i], w.key(k), partition=0)
                break
            except BufferError:
                p.poll(0.005)
        if not i & 1023:
            p.poll(0)
            prog.tick(i + 1 - len(p))
    while p.flush(1.0) > 0:
        prog.tick(w.records - len(p))
    prog.tick(w.records, force=True)
    if errors:
        raise RuntimeError(f"{label}: {len(errors)} writes failed, first: {errors[0]}")
    return time.perf_counter() - start


class Sampler:
    """The resident set of a process every `every` s while a read runs (peak and start),
    and its CPU seconds over the read."""

    def __init__(self, pid: int | None, every: float = 0.05) -> None:
        self._pid = pid
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.start_mib = self.peak_mib = 0.0
        self._ticks0 = 0
        self.cpu_s = 0.0

    def _rss_mib(self) -> float:
        if self._pid is None:
            return 0.0
        for line in Path(f"/proc/{self._pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def _ticks(self) -> int:
        if self._pid is None:
            return 0
        fields = Path(f"/proc/{self._pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.peak_mib = max(self.peak_mib, self._rss_mib())

    def __enter__(self) -> Sampler:
        self.start_mib = self.peak_mib = self._rss_mib()
        self._ticks0 = self._ticks()
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mib = max(self.peak_mib, self._rss_mib())
        self.cpu_s = (self._ticks() - self._ticks0) / _TICK


@dataclass
class ReadResult(Rates):
    target: str
    view: str  # "whole log" or "compacted"
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0
    rss_start_mib: float = 0.0
    rss_peak_mib: float = 0.0
    server_cpu_s: float = 0.0
    first_s: float = 0.0  # the same read once before, the first on this server process
    problems: list[str] = field(default_factory=list)
    note: str = ""


def read_from_start(
    bootstrap: str, topic: str, label: str, high: int, pid: int | None, values: Values,
    expect: int, deadline_s: float = 600, progress: bool = True,
) -> tuple[ReadResult, dict[bytes, int], list[int]]:  # fmt: skip
    """Read partition 0 from offset 0 up to `high`, as fast as the client goes, checking
    that the record at offset i carries `values[i]`; progress counts records against
    `expect`. Returns the result, each key's last offset seen, and the offsets out of
    order."""
    c = Consumer({
        "bootstrap.servers": bootstrap, "logger": client_log, "group.id": "kop-bench",
        "enable.auto.commit": False, "enable.auto.offset.store": False,
        "auto.offset.reset": "error", "fetch.queue.backoff.ms": 10,  # see kafka_side.consume
    })  # fmt: skip
    out = ReadResult(label, "")
    last: dict[bytes, int] = {}
    disorder: list[int] = []
    bad_values = 0
    prog = Progress(label, expect, 1)
    prev = -1
    try:
        c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)  # opens the partition
        with Sampler(pid) as sampler:
            start = time.perf_counter()
            c.assign([TopicPartition(topic, 0, 0)])
            while prev + 1 < high:
                if time.perf_counter() - start > deadline_s:
                    out.problems.append(f"stopped at offset {prev + 1} after {deadline_s:.0f} s")
                    break
                # consume() returns when it has num_messages or after timeout: small
                # both, or the last batch of a read waits out the timeout and counts it
                for m in c.consume(num_messages=1000, timeout=0.02):
                    if m.error() is not None:
                        out.problems.append(f"consume error: {m.error()}")
                        continue
                    off, key, value = m.offset() or 0, m.key() or b"", m.value() or b""
                    if off <= prev:
                        disorder.append(off)
                    prev = off
                    last[key] = off
                    bad_values += value != values[off]
                    out.records += 1
                    out.bytes += len(key) + len(value)
                if out.problems:
                    break
                prog.record_bytes = out.bytes // max(out.records, 1)
                if progress:
                    prog.tick(out.records)
            out.seconds = time.perf_counter() - start
        if progress:
            prog.tick(out.records, force=True)
    finally:
        c.close()
    if bad_values:
        out.problems.append(f"{bad_values} records with another value than written there")
    out.rss_start_mib, out.rss_peak_mib = sampler.start_mib, sampler.peak_mib
    out.server_cpu_s = sampler.cpu_s
    return out, last, disorder


def read_twice(
    bootstrap: str, topic: str, label: str, high: int, pid: int | None, values: Values,
    expect: int,
) -> tuple[ReadResult, dict[bytes, int], list[int]]:  # fmt: skip
    """The read twice: the first on a fresh kop also pays for imports and connections
    (its time is `first_s`); the rates are the second's, the RSS from the start of the
    first to the peak of both."""
    first, *_ = read_from_start(bootstrap, topic, f"{label} (first)", high, pid, values, expect)
    out, last, disorder = read_from_start(bootstrap, topic, label, high, pid, values, expect)
    out.first_s = first.seconds
    out.rss_start_mib = first.rss_start_mib
    out.rss_peak_mib = max(first.rss_peak_mib, out.rss_peak_mib)
    out.problems = first.problems + out.problems
    return out, last, disorder


def check(out: ReadResult, last: dict[bytes, int], disorder: list[int], want: Expected,
          whole: bool) -> None:  # fmt: skip
    """Note in `out.problems` where the read differs from what the log must hold."""
    if disorder:
        out.problems.append(f"{len(disorder)} offsets out of order, first {disorder[0]}")
    if whole and out.records != want.records:
        out.problems.append(f"{out.records} records, expected {want.records}")
    if last != want.last:
        wrong = [k for k in want.last if last.get(k) != want.last[k]]
        extra = len(set(last) - set(want.last))
        out.problems.append(
            f"{len(wrong)} keys without their last write at its offset, {extra} unknown keys"
        )
