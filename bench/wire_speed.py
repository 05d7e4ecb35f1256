"""Throughput of kop's Pulsar wire client (kop/pulsar/wire) against a real Pulsar.

    python -m bench.wire_speed                      # 256 KiB entries, 20 s each way
    python -m bench.wire_speed --entry-bytes 1024 --seconds 10

Produces entries of --entry-bytes (incompressible) to a fresh one-partition topic
as fast as the producer's back-pressure allows, then reads them all back with a
reader from the earliest entry. Prints a rate line every --interval seconds and a
summary per phase: entries/s, MB/s (10^6 bytes of payload) and this process's CPU
use (100% = one core busy), so the client's own cost shows beside the broker's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

from kop.pulsar.wire import WireClient, pb

MB = 1_000_000


@dataclass
class Meter:
    """Counts entries and bytes; prints a rate line every `interval` seconds."""

    phase: str
    interval: float
    entries: int = 0
    bytes: int = 0

    def __post_init__(self) -> None:
        self.start = self._last_t = time.monotonic()
        self.cpu0 = self._last_cpu = time.process_time()
        self._last_entries = self._last_bytes = 0

    def add(self, size: int) -> None:
        self.entries += 1
        self.bytes += size
        now = time.monotonic()
        if now - self._last_t >= self.interval:
            self._line(now)

    def _line(self, now: float) -> None:
        dt = now - self._last_t
        cpu = time.process_time()
        print(
            f"{self.phase:7s} t={now - self.start:6.1f}s "
            f"{(self.entries - self._last_entries) / dt:9.0f} entries/s "
            f"{(self.bytes - self._last_bytes) / dt / MB:8.1f} MB/s "
            f"cpu {100 * (cpu - self._last_cpu) / dt:4.0f}%",
            flush=True,
        )
        self._last_t, self._last_cpu = now, cpu
        self._last_entries, self._last_bytes = self.entries, self.bytes

    def summary(self) -> dict[str, float]:
        elapsed = time.monotonic() - self.start
        cpu = time.process_time() - self.cpu0
        result = {
            "entries": self.entries,
            "seconds": round(elapsed, 2),
            "entries_per_s": round(self.entries / elapsed, 1),
            "mb_per_s": round(self.bytes / elapsed / MB, 1),
            "cpu_percent": round(100 * cpu / elapsed, 1),
        }
        print(f"{self.phase} total: {json.dumps(result)}", flush=True)
        return result


def _admin(http: str, method: str, path: str, body: object = None) -> None:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{http}/admin/v2/{path}",
        method=method,
        data=data,
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=60).close()


async def produce(client: WireClient, topic: str, args: argparse.Namespace) -> Meter:
    producer = await client.create_producer(topic, max_pending_bytes=args.max_pending_bytes)
    payload = os.urandom(args.entry_bytes)
    meter = Meter("produce", args.interval)
    deadline = time.monotonic() + args.seconds
    failures: list[BaseException] = []

    def done(future: asyncio.Future[tuple[int, int]]) -> None:
        if future.exception() is not None:
            failures.append(future.exception())  # type: ignore[arg-type]
        else:
            meter.add(len(payload))

    while time.monotonic() < deadline and (args.entries is None or meter.entries < args.entries):
        await producer.wait_for_room(len(payload))
        producer.send(
            pb.MessageMetadata(uncompressed_size=len(payload)), payload
        ).add_done_callback(done)
    await producer.close()
    if failures:
        raise RuntimeError(f"{len(failures)} sends failed, first: {failures[0]!r}")
    return meter


async def read(client: WireClient, topic: str, count: int, args: argparse.Namespace) -> Meter:
    reader = await client.create_reader(topic, None, receiver_queue=args.receiver_queue)
    meter = Meter("read", args.interval)
    for _ in range(count):
        entry = await reader.read()
        meter.add(len(entry.payload))
    await reader.close()
    return meter


async def main_async(args: argparse.Namespace) -> None:
    local = f"wire-speed-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://{args.namespace}/{local}-partition-0"
    _admin(args.http_url, "PUT", f"persistent/{args.namespace}/{local}/partitions", 1)
    print(f"topic {topic}, entries of {args.entry_bytes} bytes", flush=True)
    client = WireClient(args.service_url)
    try:
        produced = await produce(client, topic, args)
        results = {"produce": produced.summary()}
        if not args.produce_only:
            results["read"] = (await read(client, topic, produced.entries, args)).summary()
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
    finally:
        await client.close()
        if not args.keep:
            _admin(
                args.http_url,
                "DELETE",
                f"persistent/{args.namespace}/{local}/partitions?force=true",
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.wire_speed", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--service-url", default="pulsar://localhost:6650")
    parser.add_argument("--http-url", default="http://localhost:8080", help="Pulsar admin REST")
    parser.add_argument("--namespace", default="public/default")
    parser.add_argument("--entry-bytes", type=int, default=256 * 1024)
    parser.add_argument("--seconds", type=float, default=20.0, help="produce phase length")
    parser.add_argument("--entries", type=int, default=None, help="stop producing after this many")
    parser.add_argument("--max-pending-bytes", type=int, default=32 * 1024 * 1024)
    parser.add_argument(
        "--receiver-queue", type=int, default=200, help="reader prefetch (messages)"
    )
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between rate lines")
    parser.add_argument("--produce-only", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the topic afterwards")
    parser.add_argument("--json", help="also write the summaries to this file")
    args = parser.parse_args(argv)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
