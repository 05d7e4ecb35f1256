"""Pulsar's binary framing, sans-IO: bytes out of commands, frames out of bytes.

A simple frame is ``[u32 total][u32 command size][BaseCommand]``. A payload frame
(SEND from us, MESSAGE from the broker) goes on with an optional broker entry
metadata block ``[u16 0x0e02][u32 size][BrokerEntryMetadata]``, an optional checksum
``[u16 0x0e01][u32 crc32c]`` over everything after it, then ``[u32 metadata
size][MessageMetadata][payload]``. All sizes are big-endian; ``total`` counts the
bytes after itself.

Per frame the decoder does O(1) Python work: two or three protobuf parses, one CRC
over the payload in C, one copy of the payload out of the receive buffer. The
receive buffer is handed to the transport directly (`get_buffer`/`buffer_updated`,
the shape of `asyncio.BufferedProtocol`), so bytes land where they are parsed.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import cast

import crc32c
from google.protobuf.message import DecodeError

from kop.pulsar.wire.errors import CorruptEntryError, ProtocolError
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

MAGIC_CRC32C = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02
# The broker accepts frames up to its maxMessageSize (CONNECTED says how big) plus
# this much for the command and metadata (Commands.MESSAGE_SIZE_FRAME_PADDING).
FRAME_PADDING = 10 * 1024
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024

Buffer = bytes | bytearray | memoryview

_U16 = struct.Struct(">H")


def _bytes(view: memoryview) -> bytes:
    """upb parses straight from any buffer; only the stubs insist on bytes."""
    return cast(bytes, view)


_U32 = struct.Struct(">I")
_U32U32 = struct.Struct(">II")
_MAGIC_CRC = struct.Struct(">HI")


def encode_command(command: pb.BaseCommand) -> bytes:
    """A simple frame (no payload)."""
    body = command.SerializeToString()
    return _U32U32.pack(len(body) + 4, len(body)) + body


def encode_payload_head(command: pb.BaseCommand, metadata: bytes, payload: Buffer) -> bytes:
    """Everything of a checksummed payload frame up to where `payload` starts, so the
    caller writes `head` and then `payload` itself, never joining them in a copy."""
    body = command.SerializeToString()
    meta = _U32.pack(len(metadata)) + metadata
    crc = crc32c.crc32c(payload, crc32c.crc32c(meta))
    total = 4 + len(body) + _MAGIC_CRC.size + len(meta) + len(payload)
    return b"".join(
        (_U32U32.pack(total, len(body)), body, _MAGIC_CRC.pack(MAGIC_CRC32C, crc), meta)
    )


def readdress_payload_head(head: bytes, producer_id: int) -> bytes:
    """A SEND frame's head (`encode_payload_head`) for another producer id: the
    command is encoded anew, the checksum (of metadata and payload) stays."""
    total, size = _U32U32.unpack_from(head)
    command = pb.BaseCommand.FromString(head[8 : 8 + size])
    command.send.producer_id = producer_id
    body = command.SerializeToString()
    return b"".join((_U32U32.pack(total - size + len(body), len(body)), body, head[8 + size :]))


def encode_payload_command(
    command: pb.BaseCommand,
    metadata: bytes,
    payload: Buffer,
    *,
    checksum: bool = True,
    broker_entry_metadata: bytes | None = None,
) -> bytes:
    """A whole payload frame in one piece, with or without a checksum and with an
    optional broker entry metadata prefix (the shapes a broker can send)."""
    body = command.SerializeToString()
    meta = _U32.pack(len(metadata)) + metadata
    parts = [body]
    if broker_entry_metadata is not None:
        parts.append(_U16.pack(MAGIC_BROKER_ENTRY_METADATA) + _U32.pack(len(broker_entry_metadata)))
        parts.append(broker_entry_metadata)
    if checksum:
        parts.append(_MAGIC_CRC.pack(MAGIC_CRC32C, crc32c.crc32c(payload, crc32c.crc32c(meta))))
    parts += (meta, bytes(payload))
    rest = b"".join(parts)
    return _U32U32.pack(len(rest) + 4, len(body)) + rest


@dataclass(slots=True)
class Frame:
    """One decoded frame. `metadata` is set for payload frames (then `payload` is too,
    possibly empty); `checksum` tells whether the frame carried one (it was verified)."""

    command: pb.BaseCommand
    metadata: pb.MessageMetadata | None = None
    payload: bytes | None = None
    broker_entry_metadata: pb.BrokerEntryMetadata | None = None
    checksum: bool = False


class CorruptFrameError(CorruptEntryError):
    """A payload frame whose checksum or layout is wrong. The stream stays in sync (the
    frame's size was sound and it is consumed); `command` says whose entry it was."""

    def __init__(self, message: str, command: pb.BaseCommand) -> None:
        super().__init__(message)
        self.command = command


class FrameDecoder:
    """Incremental decoder over one growable receive buffer.

    Feed it with `feed(data)`, or let a transport write into `get_buffer()` and report
    with `buffer_updated(n)`; then take frames with `next_frame()` until it returns
    None. A frame larger than `max_frame_size` is a `ProtocolError`: the stream cannot
    be trusted any more. A corrupt payload frame raises `CorruptFrameError` and is
    skipped, so the next call goes on with the next frame.
    """

    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_MESSAGE_SIZE + FRAME_PADDING,
        *,
        min_free: int = 256 * 1024,
    ) -> None:
        self.max_frame_size = max_frame_size
        self._min_free = min_free  # room offered per receive (asyncio reads up to 256 KiB)
        self._buf = bytearray(min_free)
        self._start = 0  # first byte not yet decoded
        self._end = 0  # end of the bytes received
        self._want = 4  # bytes from _start needed for the next frame

    @property
    def buffered(self) -> int:
        """Bytes received and not yet decoded."""
        return self._end - self._start

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Free space at the end of the buffer, at least enough for the frame in
        progress (so a large frame arrives with no further copy)."""
        want = max(sizehint, self._want - self.buffered, self._min_free)
        if len(self._buf) - self._end < want:
            self._make_room(want)
        return memoryview(self._buf)[self._end :]

    def _make_room(self, free: int) -> None:
        kept = self.buffered
        if kept + free <= len(self._buf) and self._start > 0:
            # same-length slice assignment: a memmove, no resize
            self._buf[0:kept] = self._buf[self._start : self._end]
        else:
            grown = bytearray(max(kept + free, 2 * len(self._buf)))
            grown[0:kept] = self._buf[self._start : self._end]
            self._buf = grown
        self._start, self._end = 0, kept

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes

    def feed(self, data: Buffer) -> None:
        n = len(data)
        self.get_buffer(n)[:n] = data
        self._end += n

    def next_frame(self) -> Frame | None:
        start = self._start
        available = self._end - start
        if available < 4:
            self._want = 4
            return None
        buf = self._buf
        (total,) = _U32.unpack_from(buf, start)
        if total > self.max_frame_size or total < 4:
            raise ProtocolError(f"frame of {total} bytes (limit {self.max_frame_size})")
        end = start + 4 + total
        if end > self._end:
            self._want = 4 + total
            return None
        self._start = end
        self._want = 4
        if self._start == self._end:
            self._start = self._end = 0  # empty: the next receive starts at 0
        (size,) = _U32.unpack_from(buf, start + 4)
        pos = start + 8 + size
        if pos > end:
            raise ProtocolError(f"command of {size} bytes in a frame of {total}")
        with memoryview(buf) as view:
            try:
                command = pb.BaseCommand.FromString(_bytes(view[start + 8 : pos]))
            except DecodeError as exc:
                raise ProtocolError(f"undecodable command: {exc}") from exc
            if pos == end:
                return Frame(command)
            return _payload_frame(command, view, pos, end)


def _payload_frame(command: pb.BaseCommand, view: memoryview, pos: int, end: int) -> Frame:
    def corrupt(why: str) -> CorruptFrameError:
        return CorruptFrameError(
            f"corrupt {pb.BaseCommand.Type.Name(command.type)}: {why}", command
        )

    entry_metadata = None
    checksum = False
    try:
        if end - pos >= 6 and _U16.unpack_from(view, pos)[0] == MAGIC_BROKER_ENTRY_METADATA:
            (size,) = _U32.unpack_from(view, pos + 2)
            pos += 6 + size
            if pos > end:
                raise corrupt(f"broker entry metadata of {size} bytes overruns the frame")
            entry_metadata = pb.BrokerEntryMetadata.FromString(_bytes(view[pos - size : pos]))
        if end - pos >= 6 and _U16.unpack_from(view, pos)[0] == MAGIC_CRC32C:
            (expected,) = _U32.unpack_from(view, pos + 2)
            pos += 6
            actual = crc32c.crc32c(view[pos:end])
            if actual != expected:
                raise corrupt(f"checksum {actual:#010x}, frame says {expected:#010x}")
            checksum = True
        if end - pos < 4:
            raise corrupt("no metadata size")
        (size,) = _U32.unpack_from(view, pos)
        pos += 4 + size
        if pos > end:
            raise corrupt(f"metadata of {size} bytes overruns the frame")
        metadata = pb.MessageMetadata.FromString(_bytes(view[pos - size : pos]))
    except DecodeError as exc:
        raise corrupt(f"undecodable metadata: {exc}") from exc
    return Frame(command, metadata, bytes(view[pos:end]), entry_metadata, checksum)
