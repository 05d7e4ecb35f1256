"""Section 2: Kafka record batches (magic v2) and CRC32C.

aiokafka.record (Cython _crecords when importable) vs kafka.record (pure Python).
Workload: 1000 records, 16-byte key, 100-byte value, one 16-byte header, for each
compression attribute code 0..4. Values are compressible text (JSON-ish) so every
codec actually compresses: both builders silently fall back to an *uncompressed*
batch when compression does not shrink the payload, which the run checks.
"""

from __future__ import annotations

import gzip
import importlib
import struct
import zlib

import aiokafka.codec as acodec
import cramjam
import crc32c
import kafka.codec as kcodec
from _timing import fmt_rate, measure, table
from aiokafka.record import default_records as adr
from aiokafka.record import util as autil
from aiokafka.record._crc32c import crc as aiokafka_crc_py
from kafka.record import default_records as kdr
from kafka.record import util as kutil

N_RECORDS = 1000
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
TS0 = 1_700_000_000_000


def make_records() -> list[tuple[int, int, bytes, bytes, list[tuple[str, bytes]]]]:
    out = []
    for i in range(N_RECORDS):
        key = f"user-{i * 7919 % 100000:011d}".encode()  # 16 bytes
        value = (
            f'{{"id":{i},"user":"u{i * 7919 % 977}","event":"page_view","path":"/p/{i % 53}",'
            f'"ms":{(i * 37) % 1000}}}'
        ).encode()
        value = value.ljust(100, b" ")[:100]
        hdr = [("trace-id", f"{i * 2654435761 % (1 << 64):016x}".encode())]
        out.append((i, TS0 + i, key, value, hdr))
    return out


RECORDS = make_records()


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def build(mod, codec: int, pid: int = -1, epoch: int = -1, seq: int = -1) -> bytes:
    b = mod.DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=1 << 30,
    )
    for off, ts, k, v, h in RECORDS:
        b.append(off, timestamp=ts, key=k, value=v, headers=h)
    return bytes(b.build())


def parse(mod, data: bytes) -> int:
    batch = mod.DefaultRecordBatch(data)
    if not batch.validate_crc():
        raise ValueError("crc")
    n = 0
    for r in batch:
        r.offset, r.key, r.value, r.headers  # noqa: B018 - touch every field
        n += 1
    return n


def kio_parse(data: bytes) -> int:
    from kio.records.readers import read_batch

    batch, _ = read_batch(data, 0)
    return len(batch.records)


def run() -> tuple[str, str, str, dict[str, object]]:
    facts: dict[str, object] = {}
    facts["aiokafka_cython"] = adr.DefaultRecordBatchBuilder.__module__
    facts["aiokafka_crc"] = autil.calc_crc32c.__qualname__
    facts["kafka_python_crc"] = (
        getattr(kutil._crc32c, "__module__", "?") + "." + kutil._crc32c.__name__
    )
    missing = [m for m in ("snappy", "lz4.frame", "zstandard") if not _importable(m)]
    facts["kafka_python_missing_codec_pkgs"] = missing

    rows: list[list[str]] = []
    raw_payload = None
    interop = []
    for codec, name in CODECS.items():
        a_data = build(adr, codec)
        attr = struct.unpack_from(">h", a_data, 21)[0] & 7
        interop_ok = parse(kdr, a_data) == N_RECORDS if not missing or codec in (0, 1) else None
        k_ok = True
        try:
            k_data = build(kdr, codec)
            kattr = struct.unpack_from(">h", k_data, 21)[0] & 7
            interop_ok = interop_ok and parse(adr, k_data) == N_RECORDS
        except Exception as e:  # missing optional codec package
            k_ok = False
            k_data = b""
            kattr = -1
            facts[f"kafka_python_{name}_error"] = repr(e)
        interop.append(
            f"{name}: aiokafka attr={attr}, kafka-python attr={kattr}, "
            f"cross-parse={'OK' if interop_ok else interop_ok}"
        )
        if codec == 0:
            raw_payload = a_data[61:]

        ab = measure(lambda c=codec: build(adr, c))
        ap = measure(lambda d=a_data: parse(adr, d))
        row = [name, f"{len(a_data):,}", fmt_rate(ab.ops * N_RECORDS), fmt_rate(ap.ops * N_RECORDS)]
        if k_ok:
            kb = measure(lambda c=codec: build(kdr, c))
            kp = measure(lambda d=k_data: parse(kdr, d))
            row += [
                f"{len(k_data):,}",
                fmt_rate(kb.ops * N_RECORDS),
                fmt_rate(kp.ops * N_RECORDS),
                f"{ab.ops / kb.ops:.1f}x / {ap.ops / kp.ops:.1f}x",
            ]
        else:
            row += ["n/a", "n/a", "n/a", ""]
        rows.append(row)
    facts["interop"] = interop
    # kio.records has no compression support; only the uncompressed case is comparable
    a0 = build(adr, 0)
    kio_res = measure(lambda: kio_parse(a0))
    facts["kio_records_parse_none_rps"] = fmt_rate(kio_res.ops * N_RECORDS)

    rec_table = table(
        [
            "codec",
            "aiokafka bytes",
            "aiokafka build rec/s",
            "aiokafka parse rec/s",
            "kafka-python bytes",
            "kafka-python build rec/s",
            "kafka-python parse rec/s",
            "speedup build / parse",
        ],
        rows,
    )

    # ---- raw (de)compression of the ~130 KB record section, per implementation
    assert raw_payload is not None
    comp_rows = []
    impls = {
        "gzip": [
            (
                "aiokafka.codec (stdlib GzipFile)",
                acodec.gzip_decode,
                acodec.gzip_encode(raw_payload),
            ),
            ("kafka.codec (stdlib GzipFile)", kcodec.gzip_decode, kcodec.gzip_encode(raw_payload)),
            (
                "zlib.decompress(wbits=31)",
                lambda d: zlib.decompress(d, 31),
                gzip.compress(raw_payload, 6),
            ),
            (
                "cramjam.gzip",
                lambda d: bytes(cramjam.gzip.decompress(d)),
                gzip.compress(raw_payload, 6),
            ),
        ],
        "snappy (xerial)": [
            ("aiokafka.codec (cramjam)", acodec.snappy_decode, acodec.snappy_encode(raw_payload)),
        ],
        "lz4 frame": [
            ("aiokafka.codec (cramjam)", acodec.lz4_decode, acodec.lz4_encode(raw_payload)),
        ],
        "zstd": [
            ("aiokafka.codec (cramjam)", acodec.zstd_decode, acodec.zstd_encode(raw_payload)),
        ],
    }
    if not missing:
        impls["snappy (xerial)"].append(
            ("kafka.codec (python-snappy)", kcodec.snappy_decode, kcodec.snappy_encode(raw_payload))
        )
        impls["lz4 frame"].append(
            ("kafka.codec (python-lz4)", kcodec.lz4_decode, kcodec.lz4_encode(raw_payload))
        )
        impls["zstd"].append(
            ("kafka.codec (zstandard stream)", kcodec.zstd_decode, kcodec.zstd_encode(raw_payload))
        )
    for cname, lst in impls.items():
        for label, fn, blob in lst:
            assert bytes(fn(blob)) == raw_payload, label
            r = measure(lambda f=fn, b=blob: f(b))
            comp_rows.append(
                [
                    cname,
                    label,
                    f"{len(blob):,}",
                    f"{r.per_op_s * 1e6:.0f}",
                    f"{r.ops * len(raw_payload) / 1e6:.0f}",
                ]
            )
    enc_rows = []
    for cname, fn in [
        ("gzip lvl9 (aiokafka/kafka-python default)", acodec.gzip_encode),
        ("gzip lvl6 (stdlib gzip.compress)", lambda d: gzip.compress(d, 6)),
        ("gzip lvl6 via cramjam", lambda d: cramjam.gzip.compress(d, level=6)),
        ("snappy xerial (aiokafka, cramjam)", acodec.snappy_encode),
        ("lz4 lvl9 indep. blocks (aiokafka, cramjam)", acodec.lz4_encode),
        ("lz4 lvl0 indep. blocks (cramjam)", lambda d: acodec.lz4_encode(d, level=0)),
        ("zstd lvl3 (aiokafka, cramjam)", acodec.zstd_encode),
    ] + (
        [("lz4 lvl0 indep. blocks (kafka-python, python-lz4)", kcodec.lz4_encode)]
        if not missing
        else []
    ):
        r = measure(lambda f=fn: f(raw_payload))
        enc_rows.append(
            [
                cname,
                f"{len(fn(raw_payload)):,}",
                f"{r.per_op_s * 1e6:.0f}",
                f"{r.ops * len(raw_payload) / 1e6:.0f}",
            ]
        )
    comp_table = (
        f"decompress ({len(raw_payload):,} B uncompressed record section)\n"
        + table(
            ["codec", "implementation", "compressed B", "us/op", "MB/s (uncompressed)"], comp_rows
        )
        + "\n\ncompress\n"
        + table(["codec / setting", "compressed B", "us/op", "MB/s"], enc_rows)
    )

    # ---- CRC32C over 1 MiB
    buf = bytes(range(256)) * 4096
    ref = crc32c.crc32c(buf)
    crc_rows = []
    for label, fn, data in [
        (f"crc32c.crc32c (crc32c pkg, HW={crc32c.hardware_based})", crc32c.crc32c, buf),
        ("aiokafka.record.util.calc_crc32c (Cython)", autil.calc_crc32c, buf),
        ("kafka.record.util.calc_crc32c (-> crc32c pkg if installed)", kutil.calc_crc32c, buf),
    ]:
        assert fn(data) == ref, label
        r = measure(lambda f=fn, d=data: f(d))
        crc_rows.append([label, f"{r.per_op_s * 1e6:.1f}", f"{r.ops * len(data) / 1e9:.2f}"])
    small = buf[: 64 * 1024]
    assert aiokafka_crc_py(small) == crc32c.crc32c(small)
    r = measure(lambda: aiokafka_crc_py(small))
    crc_rows.append(
        [
            "aiokafka pure-Python fallback (64 KiB, scaled)",
            f"{r.per_op_s * 16 * 1e6:.0f}",
            f"{r.ops * len(small) / 1e9:.3f}",
        ]
    )
    crc_rows.append(["cramjam", "-", "no CRC32C API (only compressors)"])
    crc_table = table(["implementation (1 MiB buffer)", "us/op", "GB/s"], crc_rows)

    # ---- produce-path batch validation without touching records (header + CRC only)
    batch = build(adr, 0)
    HDR = struct.Struct(">qiibIhiqqqhii")

    def crc_pkg_validate() -> bool:
        h = HDR.unpack_from(batch, 0)
        return h[4] == crc32c.crc32c(memoryview(batch)[21:])

    def aiokafka_validate() -> bool:
        return adr.DefaultRecordBatch(batch).validate_crc()

    def kp_validate() -> bool:
        return kdr.DefaultRecordBatch(batch).validate_crc()

    val_rows = []
    for label, fn in [
        ("struct.unpack header + crc32c pkg", crc_pkg_validate),
        ("aiokafka DefaultRecordBatch(..).validate_crc()", aiokafka_validate),
        ("kafka-python DefaultRecordBatch(..).validate_crc()", kp_validate),
    ]:
        assert fn()
        r = measure(fn)
        val_rows.append([label, f"{r.per_op_s * 1e6:.1f}"])
    crc_table += (
        f"\n\nvalidate one {len(batch):,} B uncompressed batch "
        "(header + CRC, no record iteration)\n" + table(["method", "us/batch"], val_rows)
    )
    facts["cramjam_has_crc32c"] = any("crc" in n.lower() for n in dir(cramjam))
    return rec_table, comp_table, crc_table, facts


def builder_checks() -> list[str]:
    """Verify the builder gotchas the decision doc cites."""
    out = []
    data = bytearray(build(adr, 0, pid=42, epoch=3, seq=1000))
    b = adr.DefaultRecordBatch(bytes(data))
    out.append(
        f"aiokafka builder: producer_id/epoch/base_sequence settable (ctor or set_producer_state): "
        f"pid={b.producer_id} epoch={b.producer_epoch} seq={b.base_sequence}"
    )
    out.append(
        f"aiokafka builder: base_offset always {b.base_offset}, partition_leader_epoch always "
        f"{struct.unpack_from('>i', data, 12)[0]} (kafka-python writes "
        f"{struct.unpack_from('>i', build(kdr, 0), 12)[0]}); no args for either"
    )
    # patch base offset + leader epoch in place: both sit before the CRC'd region
    struct.pack_into(">qii", data, 0, 5_000_000, struct.unpack_from(">i", data, 8)[0], 7)
    b2 = adr.DefaultRecordBatch(bytes(data))
    crc_ok = b2.validate_crc()  # NB: aiokafka asserts if called after iterating
    offs = [r.offset for r in b2]
    out.append(
        f"patching base_offset/leader_epoch in place keeps CRC valid: crc_ok={crc_ok} "
        f"offsets={offs[0]}..{offs[-1]}"
    )
    attrs = struct.unpack_from(">h", data, 21)[0]
    out.append(
        f"builder attributes=0x{attrs:04x}: no timestamp-type (LogAppendTime) or "
        "control-batch flag "
        "can be set; those need a re-write + CRC recompute / hand-rolled control batches"
    )
    # a header key that is not valid UTF-8 (Java decodes leniently) raises while iterating
    kb = kdr.DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
    kb.append(0, TS0, b"k", b"v", [("h", b"x")])
    bad = bytearray(kb.build())
    bad[bad.rfind(b"h\x02x")] = 0xFF
    struct.pack_into(">I", bad, 17, crc32c.crc32c(bytes(bad[21:])))
    try:
        [r.headers for r in adr.DefaultRecordBatch(bytes(bad))]
        out.append("aiokafka parse of non-UTF-8 header key: accepted")
    except UnicodeDecodeError as e:
        out.append(
            f"aiokafka parse of non-UTF-8 header key raises {type(e).__name__} "
            "(catch it -> CORRUPT_MESSAGE)"
        )
    # lz4 framing flags
    for label, blob in [
        ("aiokafka.codec.lz4_encode", acodec.lz4_encode(b"x" * 200_000)),
        ("cramjam.lz4.compress (one-shot default)", bytes(cramjam.lz4.compress(b"x" * 200_000))),
    ]:
        flg = blob[4]
        out.append(f"{label}: LZ4 FLG=0b{flg:08b} block_independent={(flg >> 5) & 1}")
    return out


if __name__ == "__main__":
    a, b, c, f = run()
    print(a, b, c, f, *builder_checks(), sep="\n\n")
