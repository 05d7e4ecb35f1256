"""An answer frame as a list of pieces, the records in it not copied.

A Fetch answer is mostly records, megabytes of them, and kio's writer wrote every
field into one `BytesIO`: the records were copied into it (and again whenever it
grew), then the frame out of it, before the socket copied them once more. Written
into `FramePieces` instead, a large write (the records, as the handler hands them
over) is kept by reference and the small ones around it are joined: the frame is
what the socket sends with one gathering write (`transport.writelines`)."""

from __future__ import annotations

import struct
from typing import Protocol

Frame = bytes | list[bytes]  # a frame whole, or in pieces (`FramePieces.frame`)

# A write this large is kept as a piece of its own; smaller ones are joined (a
# piece costs the socket's gathering write a little, a copy of 4 KiB costs less).
PIECE_FROM = 4096
_SIZE = struct.Struct(">i")


class Writable(Protocol):
    """What an answer is written into: a `BytesIO`, or `FramePieces`."""

    def write(self, data: bytes, /) -> int: ...


class RecordPieces:
    """A Fetch answer's records as the batches the log holds them in, not joined:
    `FramePieces` sends each as a piece of its own. Only that writer knows it; kio
    sees a records value with a length."""

    __slots__ = ("pieces", "size")

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces
        self.size = sum(len(p) for p in pieces)

    def __len__(self) -> int:
        return self.size

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RecordPieces):
            other = b"".join(other.pieces)
        return isinstance(other, bytes | bytearray) and b"".join(self.pieces) == other

    __hash__ = None  # type: ignore[assignment]


def records_of(pieces: list[bytes]) -> bytes | RecordPieces:
    """A records value of `pieces`: one piece as it is, several unjoined."""
    if len(pieces) == 1:
        return pieces[0]
    return RecordPieces(pieces) if pieces else b""


class FramePieces:
    """A writable (the `write` kio's writers call) that keeps large writes as
    pieces; `frame()` is the frame, its size prefix first."""

    __slots__ = ("_pieces", "_size", "_small")

    def __init__(self) -> None:
        self._pieces: list[bytes] = [b""]  # the size prefix, once known
        self._small: list[bytes] = []  # small writes since the last piece: joined once
        self._size = 0

    def write(self, data: bytes | RecordPieces) -> int:
        n = len(data)
        self._size += n
        if isinstance(data, RecordPieces):
            for piece in data.pieces:
                self._add(piece)
        else:
            self._add(data)
        return n

    def _add(self, data: bytes) -> None:
        if len(data) < PIECE_FROM:
            self._small.append(data)
        else:
            self._flush()
            self._pieces.append(data)

    def _flush(self) -> None:
        if self._small:
            self._pieces.append(b"".join(self._small))
            self._small.clear()

    def frame(self) -> list[bytes]:
        self._flush()
        self._pieces[0] = _SIZE.pack(self._size)
        return self._pieces


def frame_size(frame: Frame) -> int:
    return len(frame) if isinstance(frame, bytes) else sum(len(p) for p in frame)


def joined(frame: Frame) -> bytes:
    """The frame as one bytes object (for whatever needs it whole)."""
    return frame if isinstance(frame, bytes) else b"".join(frame)
