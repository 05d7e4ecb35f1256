"""The two per-record kernels of the `pulsar` entry format, native (`kop_native`)
against their Python twins (`kop.entries.codec`), in one process, no server:

    python -m bench.native_kernels                    # both shapes, 2 s per measurement
    python -m bench.native_kernels --records 100 --seconds 5 --shape small

- encode: a produced Kafka batch -> batch layouts (`records_to_layouts` vs
  `layouts(list(iter_records(batch)))`, what `entries.pulsar_entries` runs);
- decode: a batch entry -> Kafka batches (`decode_layout` vs
  `entries.decode_layout`, what `entries.decode` runs);
- unframe: the same batch with each value in Confluent's framing of a Protobuf topic's
  version (magic, id, message indexes [0]) -> layouts of bare values
  (`records_to_framed_layouts` with the version's tail vs `entries.framed_layouts`,
  what a topic with a Protobuf schema in Pulsar runs).

Shapes: `1k` (1 KiB values, no key, no headers) and `small` (a 12-byte key,
2 headers, 100-byte values). Prints records/s and MB/s (10^6 bytes of the
Kafka batch: its records section) per kernel and implementation, and the
native speed-up.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from kop.entries import codec as entries
from kop.entries import framing
from kop.entries.framing import IdVersions
from kop.protocol.records import Record, build_batch, iter_records, read_header, records_section
from kop.storage.types import Position, StoredEntry

MB = 1_000_000
T0 = 1_767_225_600_000


def shape_records(shape: str, n: int) -> list[Record]:
    if shape == "1k":
        return [Record(i, T0 + i, None, os.urandom(1024)) for i in range(n)]
    return [
        Record(
            i,
            T0 + i,
            b"acct-%07d" % i,
            os.urandom(100),
            (("trace-id", b"%016x" % i), ("source", b"spark-job-7")),
        )
        for i in range(n)
    ]


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of `fn`, over about `seconds`."""
    fn()  # warm
    calls, start = 0, time.perf_counter()
    batch = 1
    while True:
        for _ in range(batch):
            fn()
        calls += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls / elapsed
        batch = min(batch * 2, 1024)


def measure(
    kop_native: Any, shape: str, args: argparse.Namespace
) -> Iterator[tuple[str, int, float, float, float]]:
    """(kernel, records per call, MB per call, Python calls/s, native calls/s)."""
    batch = build_batch(shape_records(shape, args.records))
    head = read_header(batch)
    section = records_section(batch, head)
    n, limit = head.record_count, args.max_entry_bytes

    def py_encode() -> Any:
        return entries.layouts(list(iter_records(batch)), limit)

    def native_encode() -> Any:
        return kop_native.records_to_layouts(section, n, head.base_timestamp, 0, limit)

    layouts: list[tuple[bytes, int]] = native_encode()
    assert layouts == py_encode(), "the kernels disagree"
    [(layout, count)] = layouts
    entry = StoredEntry(Position(1, 1), "bench", 0, T0, count, None, layout)

    def py_decode() -> Any:
        return entries.decode_layout(entry, 0)

    def native_decode() -> Any:
        return kop_native.decode_layout(layout, count, 0, T0)

    assert native_decode()[2] == py_decode()[2], "the kernels disagree"
    mb = len(section) / MB
    yield "encode", n, mb, rate(py_encode, args.seconds), rate(native_encode, args.seconds)
    yield "decode", n, mb, rate(py_decode, args.seconds), rate(native_decode, args.seconds)

    sid, tail = 7, b"\x00"  # a Protobuf root's id and message indexes
    framed_batch = build_batch(
        [
            replace(r, value=framing.framed(r.value or b"", sid, tail))
            for r in shape_records(shape, n)
        ]
    )
    framed_head = read_header(framed_batch)
    framed_section = records_section(framed_batch, framed_head)
    versions = IdVersions({sid: 0}, {sid: tail})

    def py_unframe() -> Any:
        return entries.framed_layouts(list(iter_records(framed_batch)), limit, None, versions)

    def native_unframe() -> Any:
        return kop_native.records_to_framed_layouts(
            framed_section, n, framed_head.base_timestamp, 0, limit, None, {sid: 0}, {sid: tail}
        )

    assert list(native_unframe()[0]) == py_unframe()[0], "the kernels disagree"
    framed_mb = len(framed_section) / MB
    yield (
        "unframe",
        n,
        framed_mb,
        rate(py_unframe, args.seconds),
        rate(native_unframe, args.seconds),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.native_kernels",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--shape", choices=["1k", "small", "all"], default="all")
    parser.add_argument("--records", type=int, default=500, help="records per Kafka batch")
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    parser.add_argument(
        "--max-entry-bytes", type=int, default=4 << 20, help="layout size limit (kop's default)"
    )
    args = parser.parse_args(argv)
    try:
        import kop_native
    except ImportError:
        print("kop_native is not built (make setup builds it); nothing to compare", file=sys.stderr)
        return 1

    shapes = ["1k", "small"] if args.shape == "all" else [args.shape]
    print(
        f"{'shape':6s} {'kernel':7s} {'impl':7s} {'records/s':>12s} {'MB/s':>8s} {'speed-up':>9s}"
    )
    for shape in shapes:
        for kernel, n, mb, py_rate, native_rate in measure(kop_native, shape, args):
            for impl, r in (("python", py_rate), ("native", native_rate)):
                speedup = f"{native_rate / py_rate:8.1f}x" if impl == "native" else ""
                print(
                    f"{shape:6s} {kernel:7s} {impl:7s} {r * n:12,.0f} {r * mb:8.1f} {speedup:>9s}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
