"""Pulsar's payload codecs, as its clients write them: LZ4 as a raw block (no frame;
the size comes from `uncompressed_size`), ZLIB as a zlib stream, ZSTD as a zstd
frame, SNAPPY as raw snappy.

Any Pulsar producer writes these, so the declared `uncompressed_size` is checked
against a bound before anything is sized from it, and no codec inflates past it
(`kop.protocol.compression`): a payload that would is corrupt to kop, as one that
does not decompress. `compress` writes them the same way, so any Pulsar consumer
reads what kop stores."""

from __future__ import annotations

import zlib

import cramjam

from kop.protocol import compression
from kop.pulsar.wire.errors import CorruptEntryError
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

# Unless the reader is told otherwise (config `max_uncompressed_entry_bytes`).
MAX_UNCOMPRESSED_BYTES = 64 << 20

_NONE, _LZ4, _ZLIB, _ZSTD, _SNAPPY = (
    int(c) for c in (pb.NONE, pb.LZ4, pb.ZLIB, pb.ZSTD, pb.SNAPPY)
)


# Fast levels: kop compresses on its produce path.
_ZLIB_LEVEL = 1
_ZSTD_LEVEL = 1


def compress(codec: int, data: bytes) -> bytes:
    """`data` as Pulsar's clients write it in `codec` (a CompressionType other than
    NONE); ValueError for an unknown one."""
    if codec == _LZ4:
        return bytes(cramjam.lz4.compress_block(data, store_size=False))
    if codec == _ZLIB:
        return zlib.compress(data, _ZLIB_LEVEL)
    if codec == _ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL))
    if codec == _SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    raise ValueError(f"no Pulsar codec {codec}")


def decompress(
    metadata: pb.MessageMetadata, payload: bytes, limit: int = MAX_UNCOMPRESSED_BYTES
) -> bytes:
    """The uncompressed payload of an entry; CorruptEntryError when it does not
    decompress to `uncompressed_size` bytes, or that size is past `limit`."""
    codec = metadata.compression
    if codec == _NONE:
        return payload
    size = metadata.uncompressed_size
    name = pb.CompressionType.Name(codec) if codec in pb.CompressionType.values() else str(codec)
    if size > limit:
        raise CorruptEntryError(
            f"{name} payload declares {size} bytes uncompressed, more than {limit} "
            "(max_uncompressed_entry_bytes)"
        )
    try:
        if codec == _LZ4:
            out = compression.lz4_block(payload, size, limit)
        elif codec == _ZLIB:
            out = compression.zlib_stream(payload, size)
        elif codec == _ZSTD:
            out = compression.zstd(payload, size)
        elif codec == _SNAPPY:
            out = compression.snappy_raw(payload, size)
        else:
            raise CorruptEntryError(f"unknown compression {codec}")
    except compression.TooLarge:
        raise CorruptEntryError(f"{name} payload decompresses to more than {size} bytes") from None
    except compression.Undecodable as exc:
        raise CorruptEntryError(f"{name} payload does not decompress: {exc}") from exc
    if len(out) != size:
        raise CorruptEntryError(f"{name} payload decompressed to {len(out)} bytes, not {size}")
    return out
