"""Pulsar's payload codecs, as its clients write them: LZ4 as a raw block (no frame;
the size comes from `uncompressed_size`), ZLIB as a zlib stream, ZSTD as a zstd
frame, SNAPPY as raw snappy."""

from __future__ import annotations

import zlib

import cramjam

from kop.pulsar.wire.errors import CorruptEntryError
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

_NONE, _LZ4, _ZLIB, _ZSTD, _SNAPPY = (
    int(c) for c in (pb.NONE, pb.LZ4, pb.ZLIB, pb.ZSTD, pb.SNAPPY)
)


def decompress(metadata: pb.MessageMetadata, payload: bytes) -> bytes:
    """The uncompressed payload of an entry; CorruptEntryError when it does not
    decompress to `uncompressed_size` bytes."""
    codec = metadata.compression
    if codec == _NONE:
        return payload
    size = metadata.uncompressed_size
    try:
        if codec == _LZ4:
            out = bytes(cramjam.lz4.decompress_block(payload, output_len=size))
        elif codec == _ZLIB:
            out = zlib.decompress(payload)
        elif codec == _ZSTD:
            out = bytes(cramjam.zstd.decompress(payload))
        elif codec == _SNAPPY:
            out = bytes(cramjam.snappy.decompress_raw(payload))
        else:
            raise CorruptEntryError(f"unknown compression {codec}")
    except (cramjam.DecompressionError, zlib.error) as exc:
        name = pb.CompressionType.Name(codec)
        raise CorruptEntryError(f"{name} payload does not decompress: {exc}") from exc
    if len(out) != size:
        name = pb.CompressionType.Name(codec)
        raise CorruptEntryError(f"{name} payload decompressed to {len(out)} bytes, not {size}")
    return out
