"""The same workload with the native Pulsar Python client, straight to Pulsar.

Topics are created like kop creates them (a partitioned topic with one
partition) and used through their `-partition-0` topic, as kop does.
"""

from __future__ import annotations

import logging
import time
import urllib.request

import _pulsar
import pulsar

from bench.common import Progress, Values, Workload

client_log = logging.getLogger("bench.pulsar-client")


def create_topic(http_url: str, name: str) -> str:
    """Create public/default/<name> with one partition; returns the partition topic."""
    req = urllib.request.Request(
        f"{http_url.rstrip('/')}/admin/v2/persistent/public/default/{name}/partitions",
        data=b"1",
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30):
        pass
    return f"persistent://public/default/{name}-partition-0"


def delete_topic(http_url: str, name: str) -> str | None:
    """Delete public/default/<name> (partitioned) with its data; returns an error or None."""
    req = urllib.request.Request(
        f"{http_url.rstrip('/')}/admin/v2/persistent/public/default/{name}/partitions?force=true",
        method="DELETE",
    )
    try:
        with urllib.request.urlopen(req, timeout=60):
            return None
    except OSError as exc:
        return f"{name}: {exc}"


class Native:
    def __init__(self, service_url: str) -> None:
        self.e2e_ms: list[float] = []
        self.client = pulsar.Client(service_url, logger=client_log, operation_timeout_seconds=30)

    def close(self) -> None:
        self.client.close()

    def produce(
        self, topic: str, w: Workload, values: Values, count: int, label: str, quiet: bool = False
    ) -> tuple[int, float, int]:
        """Batching producer (delay = linger.ms, max batch = batch.size), async sends + flush.

        Sends go through the client's C++ binding (`_pulsar`, as kop itself does) with
        a builtin as the completion callback: a Python-level callback per message
        halves the rate, because each one takes the GIL from the sending thread.
        The callback keeps the last result per result code, so any failure shows."""
        producer = self.client.create_producer(
            topic,
            batching_enabled=True,
            batching_max_publish_delay_ms=w.linger_ms,
            batching_max_allowed_size_in_bytes=w.batch_bytes,
            batching_max_messages=100_000,
            block_if_queue_full=True,
            max_pending_messages=10_000,  # bounds sent-but-unacked, so progress is honest
            compression_type=pulsar.CompressionType.NONE,
            send_timeout_millis=120_000,
        )
        raw = producer._producer
        outcomes: dict[pulsar.Result, object] = {}
        done = outcomes.__setitem__
        builder_cls = _pulsar.MessageBuilder
        keys = [w.key(i) for i in range(count)]
        prog = Progress(label, count, w.record_bytes)
        start = time.perf_counter()
        sent = 0
        for i in range(count):
            b = builder_cls()
            b.content(values[i])
            b.partition_key(keys[i])
            raw.send_async(b.build(), done)
            sent += 1
            if not i & 1023:
                if not quiet:
                    prog.tick(sent)  # sent - acked <= max_pending_messages
                if time.perf_counter() - start > w.max_phase_s:
                    break
        producer.flush()
        elapsed = time.perf_counter() - start
        if not quiet:
            prog.tick(sent, force=True)
        producer.close()
        failed = [r for r in outcomes if r != pulsar.Result.Ok]
        if failed:
            client_log.error("%s: send failures: %s", label, failed)
        return sent, elapsed, len(failed)

    def latency(
        self, topic: str, w: Workload, values: Values, label: str
    ) -> tuple[list[float], int]:
        """One message at a time, synchronous send, batching off: send -> ack, in ms.
        Also records send -> a tail Reader receives it (`self.e2e_ms`), the wait kop
        adds to every produce (kop answers once its own tail reader saw the write)."""
        producer = self.client.create_producer(topic, batching_enabled=False)
        reader = self.client.create_reader(topic, pulsar.MessageId.latest)
        out: list[float] = []
        self.e2e_ms = []
        errors = 0
        warm = 20
        prog = Progress(label, w.latency_records, w.record_bytes)
        try:
            for i in range(w.latency_records + warm):
                if i == warm:
                    out.clear()
                    self.e2e_ms.clear()
                t0 = time.perf_counter()
                try:
                    producer.send(values[i], partition_key=w.key(i))
                    t1 = time.perf_counter()
                    msg = reader.read_next(10_000)
                    t2 = time.perf_counter()
                except pulsar.PulsarException:
                    errors += 1
                    continue
                if msg.partition_key() != w.key(i):
                    errors += 1
                out.append((t1 - t0) * 1000)
                self.e2e_ms.append((t2 - t0) * 1000)
                prog.tick(len(out))
            prog.tick(len(out), force=True)
        finally:
            reader.close()
            producer.close()
        return out, errors

    def consume(
        self, topic: str, w: Workload, values: Values, count: int, label: str, quiet: bool = False
    ) -> tuple[int, float, int, str]:
        """A Reader from the earliest message, checking every key and value."""
        prog = Progress(label, count, w.record_bytes)
        start = time.perf_counter()
        reader = self.client.create_reader(
            topic, pulsar.MessageId.earliest, receiver_queue_size=1000
        )
        got = 0
        errors = 0
        note = ""
        try:
            while got < count:
                try:
                    msg = reader.read_next(30_000)
                except pulsar.Timeout:
                    note = f"stalled: no data for 30 s at record {got}"
                    break
                if msg.partition_key() != w.key(got) or msg.data() != values[got]:
                    errors += 1
                    note = note or f"record {got}: unexpected key {msg.partition_key()!r} or value"
                got += 1
                if not got & 1023 and not quiet:
                    prog.tick(got)
            elapsed = time.perf_counter() - start
            if not quiet:
                prog.tick(got, force=True)
        finally:
            reader.close()
        return got, elapsed, errors, note
