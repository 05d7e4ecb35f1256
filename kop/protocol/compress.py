"""Kafka's codecs, compressing: what kop writes when it serves records in the
codec their producer used (`compression.type=producer`).

Each writes what every Kafka client reads, as Kafka's own Java producer writes it:
- gzip: one gzip member.
- snappy: xerial's block framing (32 KiB blocks), as the Java client writes it.
- lz4: an LZ4 frame of independent blocks, no content checksum (KIP-57; Kafka's
  reader refuses linked blocks).
- zstd: one zstd frame.

The levels are fast ones: the producer's bytes are gone (kop stored records, not
the batch), and a consumer needs the codec, not the producer's level.
"""

from __future__ import annotations

import struct
import zlib

import cramjam

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
CODECS = (GZIP, SNAPPY, LZ4, ZSTD)
NAMES = {0: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

_GZIP_LEVEL = 1
_ZSTD_LEVEL = 1
_LZ4_LEVEL = 1  # cramjam's default (4) is high compression: six times slower
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_I32 = struct.Struct(">i")


def compress(codec: int, data: bytes | memoryview) -> bytes:
    """`data` in Kafka's codec `codec` (1-4); ValueError for any other."""
    if codec == GZIP:
        c = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        return _xerial(memoryview(data))
    if codec == LZ4:
        lz4 = cramjam.lz4.Compressor(level=_LZ4_LEVEL, content_checksum=False, block_linked=False)
        lz4.compress(bytes(data))
        return bytes(lz4.finish())
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL))
    raise ValueError(f"no Kafka codec {codec}")


def _xerial(view: memoryview) -> bytes:
    out = [_XERIAL_HEADER]
    for i in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[i : i + _XERIAL_BLOCK]))
        out.append(_I32.pack(len(block)))
        out.append(block)
    return b"".join(out)
