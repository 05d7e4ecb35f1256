"""Payloads of entries any Pulsar producer wrote: each codec as Pulsar's clients
write it reads back; a declared size past the bound, or a payload that inflates
past what it declares, is a corrupt entry before anything is sized from it."""

from __future__ import annotations

import zlib

import cramjam
import pytest

from kop.pulsar.wire.compression import decompress
from kop.pulsar.wire.errors import CorruptEntryError
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

DATA = b"a Pulsar message " * 300
WRITTEN = {
    pb.LZ4: bytes(cramjam.lz4.compress_block(DATA, store_size=False)),
    pb.ZLIB: zlib.compress(DATA),
    pb.ZSTD: bytes(cramjam.zstd.compress(DATA)),
    pb.SNAPPY: bytes(cramjam.snappy.compress_raw(DATA)),
}


def _meta(codec: int, size: int) -> pb.MessageMetadata:
    return pb.MessageMetadata(compression=codec, uncompressed_size=size)


@pytest.mark.parametrize("codec", list(WRITTEN))
def test_each_codec_reads_back(codec: int) -> None:
    assert decompress(_meta(codec, len(DATA)), WRITTEN[codec], 1 << 20) == DATA


@pytest.mark.parametrize("codec", list(WRITTEN))
def test_a_declared_size_past_the_bound_is_corrupt_before_decompressing(codec: int) -> None:
    """LZ4 used to size its output from the declared 4 GiB."""
    with pytest.raises(CorruptEntryError, match="declares 4294967295 bytes"):
        decompress(_meta(codec, 2**32 - 1), WRITTEN[codec], 1 << 20)


@pytest.mark.parametrize("codec", list(WRITTEN))
def test_a_payload_inflating_past_its_declared_size_is_corrupt(codec: int) -> None:
    with pytest.raises(CorruptEntryError):
        decompress(_meta(codec, 100), WRITTEN[codec], 1 << 20)
