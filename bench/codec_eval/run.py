"""Codec evaluation for kop: run with `python bench/codec_eval/run.py [--quick]`.

Prints markdown tables for
  1. protocol codecs: kio vs kafka-python (server-side decode of requests / encode of responses)
  2. API-version coverage
  3. record batches (magic v2): aiokafka.record vs kafka.record, per compression codec
  4. raw compression and CRC32C implementations
plus the checks behind the gotchas listed in docs/decisions.md.

Optional packages: kafka-python's snappy/lz4/zstd paths need python-snappy, lz4 and
zstandard (not kop dependencies); without them those rows print n/a.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _timing  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="shorter timing loops (noisier)")
    args = ap.parse_args()
    if args.quick:
        _timing.TARGET_S = 0.03
        _timing.REPEATS = 3

    import api_coverage
    import protocol_bench
    import records_bench

    t0 = time.perf_counter()
    print(f"# kop codec evaluation\n\nmachine: {_timing.machine_line()}")
    print(
        f"timing: median of {_timing.REPEATS} repeats x ~{_timing.TARGET_S * 1000:.0f} ms, GC on\n"
    )

    print("## 1. Protocol codecs (bodies of flexible versions)\n")
    text, facts = protocol_bench.run()
    print(text)
    print()
    for k, v in facts.items():
        print(f"- {k}: {v}")

    print("\n## 2. API version coverage\n")
    text, notes = api_coverage.run()
    print(text)
    print()
    for n in notes:
        print(f"- {n}")

    print("\n## 3. Record batches: 1000 records (16 B key, 100 B value, 1 header)\n")
    rec, comp, crc, facts = records_bench.run()
    print(rec)
    print()
    for k, v in facts.items():
        print(f"- {k}: {v}")
    print("\n## 4. Compression codecs (raw)\n")
    print(comp)
    print("\n## 5. CRC32C\n")
    print(crc)
    print("\n## 6. Builder / framing checks\n")
    for line in records_bench.builder_checks():
        print(f"- {line}")
    print(f"\n(total {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
