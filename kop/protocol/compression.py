"""Decompression with a bound on the output, for payloads from outside.

A 1 MiB Kafka batch or a 5 MiB Pulsar entry can inflate to many GiB. Every
function here stops once its output would pass `limit` and raises `TooLarge`,
having held at most `limit` + 1 bytes of output; input that does not decompress
raises `Undecodable`. Nothing is sized from a length in the data before that
length is checked against `limit`.

How each codec is bounded:
- gzip / zlib: the standard library's `decompressobj(...).decompress(data, max_length)`.
- zstd and LZ4 frames: cramjam's streaming `decompress_into` writes into a buffer of
  `limit` + 1 bytes and fails when it is full. The buffer is an anonymous mmap, so
  only the pages actually written are ever backed by memory.
- snappy (raw, or in xerial's blocks as Kafka's Java client writes it): the raw
  format states its length up front; the sum is checked before any block inflates.
- Pulsar's LZ4 (a raw block of the `uncompressed_size` its metadata declares): the
  declared size is checked first.
"""

from __future__ import annotations

import mmap
import struct
import threading
import zlib
from collections.abc import Callable

import cramjam

__all__ = [
    "DecompressionFailed",
    "TooLarge",
    "Undecodable",
    "gzip",
    "kafka_snappy",
    "lz4_block",
    "lz4_frame",
    "snappy_raw",
    "zlib_stream",
    "zstd",
]


class DecompressionFailed(ValueError):
    """A payload that cannot be decompressed within its bound."""


class Undecodable(DecompressionFailed):
    """Not a valid stream of its codec (truncated, corrupt, trailing garbage)."""


class TooLarge(DecompressionFailed):
    """It would decompress to more than the bound."""

    def __init__(self, limit: int, what: str = "payload") -> None:
        super().__init__(f"{what} decompresses to more than {limit} bytes")
        self.limit = limit


_GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip header and trailer, nothing else
_XERIAL_HEADER = b"\x82SNAPPY\x00"  # then version and compat, two int32s
_XERIAL_HEADER_SIZE = 16
_I32 = struct.Struct(">i")
# cramjam's message when `decompress_into` runs out of room (Rust's io::ErrorKind::WriteZero);
# tests/unit/test_compression.py pins it for every codec that relies on it.
_FULL = "failed to write whole buffer"


def gzip(data: bytes | memoryview, limit: int) -> bytes:
    """A gzip stream as Kafka's gzip codec writes it: one or more members, optionally
    followed by zero padding (what `gzip.GzipFile` reads)."""
    out: list[bytes] = []
    room = limit
    rest: bytes | memoryview = data
    while rest:
        d = zlib.decompressobj(_GZIP_WBITS)
        try:
            part = d.decompress(rest, room + 1)
        except zlib.error as exc:
            raise Undecodable(f"gzip: {exc}") from None
        if len(part) > room:
            raise TooLarge(limit)
        if not d.eof:
            raise Undecodable("gzip: truncated stream")
        out.append(part)
        room -= len(part)
        rest = d.unused_data.lstrip(b"\x00")
    return out[0] if len(out) == 1 else b"".join(out)


def zlib_stream(data: bytes | memoryview, limit: int) -> bytes:
    """One zlib stream (Pulsar's ZLIB)."""
    d = zlib.decompressobj()
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise Undecodable(f"zlib: {exc}") from None
    if len(out) > limit:
        raise TooLarge(limit)
    if not d.eof:
        raise Undecodable("zlib: truncated stream")
    return out


def zstd(data: bytes | memoryview, limit: int) -> bytes:
    """Zstandard frames."""
    return _bounded(cramjam.zstd.decompress_into, data, limit, "zstd")


def lz4_frame(data: bytes | memoryview, limit: int) -> bytes:
    """LZ4 frames (Kafka's lz4 codec, KIP-57)."""
    return _bounded(cramjam.lz4.decompress_into, data, limit, "lz4")


def lz4_block(data: bytes | memoryview, size: int, limit: int) -> bytes:
    """A raw LZ4 block that decompresses to exactly `size` bytes."""
    if size > limit:
        raise TooLarge(limit)
    if size < 0:
        raise Undecodable(f"lz4: negative size {size}")
    try:
        out = bytes(cramjam.lz4.decompress_block(data, output_len=size))
    except cramjam.DecompressionError as exc:
        raise Undecodable(_why("lz4", exc)) from None
    if len(out) != size:
        raise Undecodable(f"lz4: {len(out)} bytes, not {size}")
    return out


def snappy_raw(data: bytes | memoryview, limit: int) -> bytes:
    """Raw snappy (its length is stated first, and checked before inflating)."""
    block = bytes(data)
    _snappy_room(block, limit)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise Undecodable(_why("snappy", exc)) from None


def kafka_snappy(data: bytes | memoryview, limit: int) -> bytes:
    """Kafka's snappy: xerial's block framing (the Java client) or raw snappy."""
    view = memoryview(data)
    if len(view) <= _XERIAL_HEADER_SIZE or bytes(view[:8]) != _XERIAL_HEADER:
        return snappy_raw(view, limit)
    blocks: list[bytes] = []
    room = limit
    pos = _XERIAL_HEADER_SIZE
    while pos < len(view):
        if len(view) - pos < 4:
            raise Undecodable("snappy: truncated xerial block size")
        (size,) = _I32.unpack_from(view, pos)
        pos += 4
        if size < 0 or size > len(view) - pos:
            raise Undecodable(f"snappy: xerial block of {size} bytes past the end")
        block = bytes(view[pos : pos + size])
        pos += size
        room -= _snappy_room(block, room, limit)
        blocks.append(block)
    try:
        return b"".join(bytes(cramjam.snappy.decompress_raw(b)) for b in blocks)
    except cramjam.DecompressionError as exc:
        raise Undecodable(_why("snappy", exc)) from None


def _snappy_room(block: bytes, room: int, limit: int | None = None) -> int:
    """The length a raw snappy block states, checked against `room`."""
    try:
        size = int(cramjam.snappy.decompress_raw_len(block))
    except cramjam.DecompressionError as exc:
        raise Undecodable(_why("snappy", exc)) from None
    if size > room:
        raise TooLarge(room if limit is None else limit)
    return size


def _bounded(
    into: Callable[[bytes | memoryview, memoryview], int],
    data: bytes | memoryview,
    limit: int,
    name: str,
) -> bytes:
    scratch = _scratch(limit + 1)
    with memoryview(scratch)[: limit + 1] as out:
        try:
            n = into(data, out)
        except cramjam.DecompressionError as exc:
            _release(scratch)
            if _FULL in str(exc):
                raise TooLarge(limit) from None
            raise Undecodable(_why(name, exc)) from None
        result = out[:n].tobytes()
    if n > _KEEP:
        _release(scratch)
    if n > limit:
        raise TooLarge(limit)
    return result


_KEEP = 4 << 20  # scratch pages kept resident between calls
_local = threading.local()


def _scratch(size: int) -> mmap.mmap:
    """This thread's output buffer of at least `size` bytes: an anonymous mapping, so
    only pages written are backed by memory, and reused, so they are not faulted in
    afresh on every call (that cost 2-3x the decompression itself)."""
    buf: mmap.mmap | None = getattr(_local, "buf", None)
    if buf is None or len(buf) < size:
        if buf is not None:
            buf.close()
        buf = _local.buf = mmap.mmap(-1, size)
    return buf


def _release(buf: mmap.mmap) -> None:
    """Give back the pages a large output left resident beyond the first `_KEEP` bytes."""
    if len(buf) > _KEEP:
        buf.madvise(mmap.MADV_DONTNEED, _KEEP, len(buf) - _KEEP)


def _why(name: str, exc: Exception) -> str:
    text = str(exc)
    return text if text.startswith(name) else f"{name}: {text}"
