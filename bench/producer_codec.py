"""What serving records in their producer's codec costs (docs/decisions.md D11), in
one process, no server:

    python -m bench.producer_codec                 # about 1 minute
    python -m bench.producer_codec --seconds 0.3   # quicker, noisier

A produced batch (1000 records: 12-byte key, 100-byte JSON-like value; the sample of
`bench.decompression`) in the `pulsar` format, per codec:
- `produce`: `entries.encode` plus the Pulsar entry's metadata and payload
  (`kop.pulsar.client._metadata`, where the entry is compressed in the Pulsar codec),
  records/s; `as none` is the same batch stored uncompressed, what kop did before.
- `fetch`: `entries.decode` of the stored entry (what the tail follower and the
  history reader run once per entry; fetches then serve its bytes), records/s, and
  `as none` the same without compressing the served batch, what kop did before.
- the bytes stored in Pulsar and served to a consumer, against uncompressed.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools

from bench.decompression import CODECS, MAX_ENTRY, median_rate, sample_batch
from kop.entries import codec as entries
from kop.entries.formats import EntryFormat
from kop.protocol.records import read_header
from kop.pulsar.client import _metadata
from kop.storage.types import OutgoingEntry, Position, StoredEntry, stored_as


def _produce(batch: bytes, codec: int) -> list[OutgoingEntry]:
    out = entries.encode(read_header(batch), batch, EntryFormat.PULSAR, True, 0, MAX_ENTRY)
    out = [dataclasses.replace(e, codec=codec) for e in out]
    for e in out:
        _metadata(e)
    return out


def _decode_all(stored: list[StoredEntry]) -> list[entries.Entry]:
    return [entries.decode(s, 0) for s in stored]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="per run (5 runs each)")
    args = ap.parse_args()
    print("records/s (median of 5); bytes per 1000-record batch")
    for name, codec in CODECS.items():
        batch = sample_batch(codec)
        n = read_header(batch).record_count
        row = [f"{name:6}"]
        rates = {}
        for label, as_codec in (("as none", 0), ("", codec)):
            rates[label] = median_rate(functools.partial(_produce, batch, as_codec), args.seconds)
        row.append(f"produce {rates[''] * n:10,.0f} (as none {rates['as none'] * n:10,.0f})")
        out = _produce(batch, codec)
        stored = [stored_as(e, Position(1, i), "w", i, 1) for i, e in enumerate(out)]
        plain = [dataclasses.replace(s, codec=0) for s in stored]
        fetch = median_rate(functools.partial(_decode_all, stored), args.seconds)
        before = median_rate(functools.partial(_decode_all, plain), args.seconds)
        row.append(f"fetch {fetch * n:10,.0f} (as none {before * n:10,.0f})")
        in_pulsar = sum(len(_metadata(e)[1]) for e in out)
        served = sum(entries.decode(s, 0).size for s in stored)
        raw = sum(entries.decode(s, 0).size for s in plain)
        row.append(f"stored {in_pulsar:7,d} B  served {served:7,d} B (uncompressed {raw:7,d})")
        print("  ".join(row), flush=True)


if __name__ == "__main__":
    main()
