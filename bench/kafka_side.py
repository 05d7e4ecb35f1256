"""The Kafka-client side of the bench (confluent-kafka / librdkafka): against kop, and
against the reference Apache Kafka broker with the very same code and settings."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import Progress, Values, Workload

client_log = logging.getLogger("bench.librdkafka")


def _base(bootstrap: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "logger": client_log}


# The idempotent-producer row: the Java client's defaults (enable.idempotence=true, acks=all).
IDEMPOTENT: dict[str, Any] = {"enable.idempotence": True, "acks": "all"}


def create_topics(bootstrap: str, topics: dict[str, str | None]) -> None:
    """Create 1-partition topics; `topics` maps name -> kop.entry.format (None: no topic
    config, for a real Kafka, which rejects configs it does not know)."""
    admin = AdminClient(_base(bootstrap))
    new = [
        NewTopic(name, 1, 1, config={"kop.entry.format": fmt} if fmt else {})
        for name, fmt in topics.items()
    ]
    for name, fut in admin.create_topics(new, operation_timeout=30, request_timeout=60).items():
        try:
            fut.result(60)
        except KafkaException as exc:
            raise RuntimeError(f"create topic {name}: {exc}") from exc
    wait_ready(bootstrap, list(topics))


def wait_ready(bootstrap: str, names: list[str], timeout_s: float = 30.0) -> None:
    """Wait until partition 0 of every topic answers ListOffsets: the broker serves it.

    Kafka acknowledges CreateTopics once the controller has committed it; the broker may
    load the partition a moment later. A non-idempotent producer whose first batch gets
    NOT_LEADER there retries it behind later batches, so the log starts out of order
    (seen once on a loaded machine: offset 0 held record 249)."""
    c = Consumer({**_base(bootstrap), "group.id": "kop-bench"})
    deadline = time.monotonic() + timeout_s
    try:
        for name in names:
            while True:
                try:
                    c.get_watermark_offsets(TopicPartition(name, 0), timeout=5, cached=False)
                    break
                except KafkaException as exc:
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"topic {name} not served after creation: {exc}"
                        ) from exc
                    time.sleep(0.1)
    finally:
        c.close()


def delete_topics(bootstrap: str, names: list[str]) -> list[str]:
    """Delete topics; returns the errors (names with reasons) instead of raising."""
    admin = AdminClient(_base(bootstrap))
    failed = []
    for name, fut in admin.delete_topics(names, operation_timeout=30, request_timeout=60).items():
        try:
            fut.result(60)
        except KafkaException as exc:
            failed.append(f"{name}: {exc}")
    return failed


def producer_config(bootstrap: str, w: Workload) -> dict[str, Any]:
    return {
        **_base(bootstrap),
        "acks": "all",
        "linger.ms": w.linger_ms,
        "batch.size": w.batch_bytes,
        "compression.type": "none",
        "enable.idempotence": False,
        # ~20 MB queued: plenty for throughput, and a time-capped phase drains in seconds
        "queue.buffering.max.messages": 20_000,
        "message.timeout.ms": 120_000,
    }


def produce(
    bootstrap: str,
    topic: str,
    w: Workload,
    values: Values,
    count: int,
    label: str,
    quiet: bool = False,
    extra: dict[str, Any] | None = None,
) -> tuple[int, float, int]:
    """Produce `count` records as fast as the client goes; (records, seconds, errors).
    Stops early (fewer records) once the phase has run `w.max_phase_s`."""
    errors: list[Any] = []

    def on_error(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    p = Producer(
        {
            **producer_config(bootstrap, w),
            "delivery.report.only.error": True,
            "on_delivery": on_error,
            **(extra or {}),
        }
    )
    p.list_topics(topic, timeout=30)  # metadata before the clock starts
    keys = [w.key(i).encode() for i in range(count)]
    prog = Progress(label, count, w.record_bytes)
    start = time.perf_counter()
    sent = 0
    for i in range(count):
        while True:
            try:
                p.produce(topic, values[i], keys[i], partition=0)
                break
            except BufferError:
                p.poll(0.005)
        sent += 1
        if not i & 1023:
            p.poll(0)
            if not quiet:
                prog.tick(sent - len(p))
            if time.perf_counter() - start > w.max_phase_s:
                break
    while p.flush(1.0) > 0:
        if not quiet:
            prog.tick(sent - len(p))
        if time.perf_counter() - start > w.max_phase_s * 3:
            errors.extend([f"{len(p)} records unacknowledged after flush"] * len(p))
            break
    elapsed = time.perf_counter() - start
    if not quiet:
        prog.tick(sent - len(p), force=True)
    if errors:
        client_log.error("%s: %d delivery errors, first: %s", label, len(errors), errors[0])
    return sent, elapsed, len(errors)


class _Deliveries:
    """Delivery reports of the latency phases: produce -> report in ms for timed
    records, and the errors of all of them."""

    def __init__(self) -> None:
        self.ms: list[float] = []
        self.errors = 0

    def timed(self, t0: float) -> Callable[[Any, Any], None]:
        def done(err: Any, _msg: Any) -> None:
            if err is not None:
                self.errors += 1
            else:
                self.ms.append((time.perf_counter() - t0) * 1000)

        return done

    def counted(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.errors += 1


def latency(
    bootstrap: str, topic: str, w: Workload, values: Values, label: str
) -> tuple[list[float], int]:
    """One record at a time (linger.ms=0, acks=all): produce -> delivery report, in ms."""
    p = Producer({**producer_config(bootstrap, w), "linger.ms": 0})
    p.list_topics(topic, timeout=30)
    got = _Deliveries()
    warm = 20
    prog = Progress(label, w.latency_records, w.record_bytes)
    for i in range(w.latency_records + warm):
        if i == warm:
            got.ms.clear()
        done = got.timed(time.perf_counter())
        p.produce(topic, values[i], w.key(i).encode(), partition=0, on_delivery=done)
        if p.flush(30) > 0:
            got.errors += 1
            break
        prog.tick(len(got.ms))
    prog.tick(len(got.ms), force=True)
    return got.ms, got.errors


# One record in this many is timed (a Python callback per record would cost more CPU
# than the broker under test at these rates; the sample is spread evenly).
LOADED_SAMPLE = 8


def loaded(
    bootstrap: str, topic: str, w: Workload, values: Values, rate: float, count: int, label: str
) -> tuple[list[float], float, int]:
    """`count` records offered at `rate` a second with the produce phase's settings (a
    due-time schedule: a stall is followed by catch-up); every LOADED_SAMPLE-th after the
    first fifth is timed produce -> delivery report. (latencies ms, seconds, errors)"""
    p = Producer({**producer_config(bootstrap, w), "delivery.report.only.error": False})
    p.list_topics(topic, timeout=30)
    got = _Deliveries()
    keys = [w.key(i).encode() for i in range(count)]
    prog = Progress(label, count, w.record_bytes)
    start = time.perf_counter()
    i = 0
    while i < count:
        due = min(count, int((time.perf_counter() - start) * rate) + 1)
        while i < due:
            timing = i % LOADED_SAMPLE == 0 and i >= count // 5  # as Java: first fifth warms
            cb = got.timed(time.perf_counter()) if timing else got.counted
            try:
                p.produce(topic, values[i], keys[i], partition=0, on_delivery=cb)
            except BufferError:  # the client's queue is full: over this target's peak
                p.poll(0.001)
                break
            i += 1
        p.poll(0)
        if not i & 4095:
            prog.tick(i - len(p))
        ahead = start + i / rate - time.perf_counter()
        if ahead > 0:
            time.sleep(min(ahead, 0.001))
    while p.flush(1.0) > 0:
        if time.perf_counter() - start > 4 * count / rate + 60:
            got.errors += len(p)
            break
    elapsed = time.perf_counter() - start
    prog.tick(count, force=True)
    return got.ms, elapsed, got.errors


def consume(
    bootstrap: str,
    topic: str,
    w: Workload,
    values: Values,
    count: int,
    label: str,
    quiet: bool = False,
) -> tuple[int, float, int, str]:
    """Read `count` records from offset 0 (assign, no group management), checking
    every offset, key and value; (records, seconds, errors, note)."""
    c = Consumer(
        {
            **_base(bootstrap),
            "group.id": "kop-bench",  # librdkafka wants one; no commits, no subscribe()
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            # librdkafka pauses a partition's fetching for this long (default 1000 ms) once
            # its local queue is over queued.max.messages.kbytes (64 MiB). A server faster
            # than this loop drains the queue hits it every ~0.5 s: the reference Kafka read
            # 120k rec/s with both processes mostly idle, 450-550k with 10 ms. kop's rate
            # is the same either way.
            "fetch.queue.backoff.ms": 10,
        }
    )
    got = 0
    errors = 0
    note = ""
    first_error = ""
    prog = Progress(label, count, w.record_bytes)
    start = time.perf_counter()
    c.assign([TopicPartition(topic, 0, 0)])
    last_data = start
    try:
        while got < count:
            msgs = c.consume(num_messages=10_000, timeout=0.5)
            now = time.perf_counter()
            if msgs:
                last_data = now
            elif now - last_data > 30:
                note = f"stalled: no data for 30 s at offset {got}"
                break
            for m in msgs:
                if m.error() is not None:
                    errors += 1
                    first_error = first_error or str(m.error())
                    continue
                if m.offset() != got or m.key() != w.key(got).encode() or m.value() != values[got]:
                    errors += 1
                    first_error = first_error or (
                        f"offset {m.offset()} (expected {got}) key {m.key()!r} "
                        f"value ok={m.value() == values[got]}"
                    )
                    got = m.offset()
                got += 1
            if not quiet:
                prog.tick(got)
        elapsed = time.perf_counter() - start
        if not quiet:
            prog.tick(got, force=True)
    finally:
        c.close()
    if first_error:
        note = (note + "; " if note else "") + f"first bad record: {first_error}"
        client_log.error("%s: %d bad records, first: %s", label, errors, first_error)
    return min(got, count), elapsed, errors, note
