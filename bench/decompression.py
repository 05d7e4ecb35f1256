"""What bounded decompression costs on the produce path, in one process, no server:

    python -m bench.decompression                  # about 1 minute
    python -m bench.decompression --seconds 0.5    # quicker, noisier

- `encode`: a produced batch (1000 records: 12-byte key, 100-byte JSON-like value)
  through `entries.encode`, what the appender runs before a write, per codec and
  entry format: records/s (median of 5 runs).
- `decompress`: the records section alone (`records_section`), MB/s of output.
- `refuse`: how long a decompression bomb (a batch of a few KiB that inflates to
  `--bomb-mib`, 1 GiB by default) takes to be refused at the default bound.
- `tiny`: the event loop's cost of the worst legal batch, tiny records up to the
  bound: ms per MiB of records section, per entry format.
- `lag`: the event loop's longest wait (a 1 ms ticker) while such a batch is
  encoded on the loop and on a worker thread (what the appender does past
  `OFFLOAD_RECORDS`).

The same file runs against an older kop (its `entries.encode` without a bound)
for the "before" column: `PYTHONPATH=<old tree> python -m bench.decompression`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import statistics
import time
from collections.abc import Callable

from kop.entries import codec as entries
from kop.entries.formats import EntryFormat
from kop.protocol.errors import KafkaError
from kop.protocol.records import Record, build_batch, read_header, records_section

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
MAX_ENTRY = 4 << 20


def _value(rng: random.Random, i: int) -> bytes:
    doc = {"id": i, "user": f"user-{rng.randrange(10**6)}", "amount": round(rng.random(), 4)}
    return json.dumps(doc).encode().ljust(100, b" ")


def sample_batch(codec: int, n: int = 1000) -> bytes:
    rng = random.Random(7)
    t0 = 1_767_225_600_000
    recs = [Record(i, t0 + i, b"acct-%07d" % i, _value(rng, i)) for i in range(n)]
    return build_batch(recs, compression=codec)


def median_rate(fn: Callable[[], object], seconds: float, repeats: int = 5) -> float:
    """Calls per second of `fn`: the median of `repeats` runs of about `seconds`."""
    fn()
    rates = []
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            fn()
            calls += 1
        rates.append(calls / elapsed)
    return statistics.median(rates)


def _bomb(codec: int, size: int) -> bytes:
    """One record whose value is `size` zero bytes, compressed with `codec`."""
    return build_batch([Record(0, 1, None, bytes(size))], compression=codec)


def _tiny(codec: int, size: int) -> bytes:
    """As many records with no key and no value as fit about `size` bytes of section."""
    n = size // 8
    return build_batch([Record(i, 1, None, None) for i in range(n)], compression=codec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="per run (5 runs each)")
    ap.add_argument("--tiny-mib", type=int, default=8, help="records section of the tiny case")
    ap.add_argument("--bomb-mib", type=int, default=1024, help="what the bombs inflate to")
    ap.add_argument("--lag-records", type=int, default=1_000_000, help="records of the lag case")
    args = ap.parse_args()

    print("encode (records/s, median of 5) and decompress (MB/s of records section)")
    for name, codec in CODECS.items():
        batch = sample_batch(codec)
        head = read_header(batch)
        section_len = len(records_section(batch, head))
        row = [f"{name:6}", f"batch {len(batch):6d} B"]
        for fmt in (EntryFormat.KAFKA, EntryFormat.PULSAR):
            rate = median_rate(
                functools.partial(entries.encode, head, batch, fmt, True, 0, MAX_ENTRY),
                args.seconds,
            )
            row.append(f"{fmt.value} {rate * head.record_count:11,.0f} rec/s")
        if codec:
            rate = median_rate(functools.partial(records_section, batch, head), args.seconds)
            row.append(f"decompress {rate * section_len / 1e6:7.1f} MB/s")
        print("  ".join(row), flush=True)

    print(f"refuse: a bomb inflating to {args.bomb_mib} MiB, at the default bound")
    for name, codec in list(CODECS.items())[1:]:
        bomb = _bomb(codec, args.bomb_mib << 20)
        head = read_header(bomb)
        start = time.perf_counter()
        try:
            entries.encode(head, bomb, EntryFormat.KAFKA, True, 0, MAX_ENTRY)
            outcome = "accepted"
        except (KafkaError, MemoryError) as exc:
            outcome = getattr(getattr(exc, "code", None), "name", type(exc).__name__)
        took = time.perf_counter() - start
        print(f"  {name:6} {len(bomb):9,d} B -> {outcome} in {took * 1e3:7.1f} ms", flush=True)

    size = args.tiny_mib << 20
    print(f"tiny: {args.tiny_mib} MiB of 8-byte records (no key, no value), zstd")
    batch = _tiny(CODECS["zstd"], size)
    head = read_header(batch)
    mib = len(records_section(batch, head)) / (1 << 20)
    for fmt, batching in ((EntryFormat.KAFKA, True), (EntryFormat.PULSAR, True)):
        start = time.perf_counter()
        entries.encode(head, batch, fmt, batching, 0, MAX_ENTRY)
        took = time.perf_counter() - start
        print(
            f"  {fmt.value:6} {head.record_count:,d} records in {took * 1e3:8.1f} ms: "
            f"{took * 1e3 / mib:6.1f} ms per MiB, "
            f"{took * 1e9 / head.record_count:5.0f} ns per record",
            flush=True,
        )
    lag(args.lag_records)


async def _lag(fn: Callable[[], object], offload: bool) -> tuple[float, float]:
    """(seconds `fn` took, the longest a 1 ms ticker waited past its time meanwhile)."""
    stop, lags = asyncio.Event(), [0.0]

    async def tick() -> None:
        while not stop.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - start - 0.001)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.01)
    start = time.perf_counter()
    if offload:
        await asyncio.to_thread(fn)
    else:
        fn()
    took = time.perf_counter() - start
    stop.set()
    await ticker
    return took, max(lags)


def lag(records: int) -> None:
    print(f"lag: {records:,} 8-byte records, zstd, encoded inline and on a thread")
    batch = _tiny(CODECS["zstd"], records * 8)
    head = read_header(batch)
    shapes = [(EntryFormat.KAFKA, True), (EntryFormat.PULSAR, True), (EntryFormat.PULSAR, False)]
    for fmt, batching in shapes:
        n = head.record_count if batching else head.record_count // 10
        part = batch if batching else _tiny(CODECS["zstd"], n * 8)
        encode = functools.partial(
            entries.encode, read_header(part), part, fmt, batching, 0, MAX_ENTRY
        )
        for offload in (False, True):
            took, worst = asyncio.run(_lag(encode, offload))
            where = "thread" if offload else "inline"
            name = fmt.value + ("" if batching else " unbatched")
            print(
                f"  {name:16} {n:9,d} records {where}: {took * 1e3:6.0f} ms, "
                f"longest loop wait {worst * 1e3:6.1f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
