"""Kafka's framing, sans-IO: a 4-byte big-endian size, then the request or response."""

from __future__ import annotations

import struct

_LEN = struct.Struct(">i")
PREFIX_BYTES = _LEN.size


class FrameTooLarge(Exception):
    """The peer announced a frame outside the configured limit; close the connection."""


def frame_size(prefix: bytes | bytearray, max_frame_bytes: int) -> int:
    """The size a frame's prefix announces, checked before any of it is buffered."""
    (size,) = _LEN.unpack(prefix)
    if size < 0 or size > max_frame_bytes:
        raise FrameTooLarge(f"frame of {size} bytes exceeds limit {max_frame_bytes}")
    return int(size)


def encode_frame(payload: bytes) -> bytes:
    return _LEN.pack(len(payload)) + payload


SCRATCH_BYTES = 64 * 1024
# The least a large frame's own buffer grows by: what a trickle of it costs.
MIN_STEP = 16 * 1024
# Zeros a frame's own buffer grows by (bytes(n) is calloc'd: untouched, it costs no memory).
_ZEROS = memoryview(bytes(1 << 20))


class FrameAssembler:
    """Request frames out of a byte stream received in place (`get_buffer` and
    `buffer_updated`, the shape of `asyncio.BufferedProtocol`).

    Frames that fit the scratch buffer arrive there and are copied out once (as
    `bytes`). A larger frame gets a buffer of its own that the socket writes the rest
    of it into (it comes out as a read-only memoryview): a 256 KiB produce request is
    copied by the kernel and by nobody else.

    Nothing is allocated from a size read off the wire. The scratch buffer is made on
    the first receive (a connection that never sends costs none), and a frame's own
    buffer starts at twice what has arrived of it (at least `min_step`) and doubles as
    it fills, so it never holds more than twice what the peer sent: a prefix
    announcing 100 MiB followed by a trickle costs `min_step`. Each allocation beyond
    the scratch buffer is asked for first (`memory_wanted`) and made once allowed
    (`allow`), which lets the owner of the stream hold it to a budget shared with
    other streams; no buffer is offered while an allocation waits.
    """

    def __init__(
        self,
        max_frame_bytes: int,
        scratch_bytes: int = SCRATCH_BYTES,
        min_step: int = MIN_STEP,
    ) -> None:
        self._max = max_frame_bytes
        self._scratch_bytes = scratch_bytes
        self._min_step = min_step
        self._scratch = bytearray()
        self._start = 0  # first byte not yet framed
        self._end = 0  # end of what was received into the scratch buffer
        self._size = 0  # the announced size of the large frame being received
        self._own: bytearray | None = None  # its buffer (None: not yet allowed)
        self._filled = 0
        self._wanted = 0  # bytes the next allocation of the large frame takes
        self._allowed = False
        self.held = 0  # bytes of large-frame buffers allocated (all allowed)

    @property
    def max_frame_bytes(self) -> int:
        return self._max

    @max_frame_bytes.setter
    def max_frame_bytes(self, value: int) -> None:
        """Applies from the next frame prefix (a SASL listener raises it once the client
        has authenticated)."""
        self._max = value

    # -- receiving ---------------------------------------------------------------------

    def get_buffer(self) -> memoryview:
        if self._size:
            if self._allowed:
                self._grow()
            assert self._own is not None and self._filled < len(self._own), "memory not allowed"
            return memoryview(self._own)[self._filled :]
        if not self._scratch:
            self._scratch = bytearray(self._scratch_bytes)
        if self._start == self._end:
            self._start = self._end = 0
        elif len(self._scratch) - self._end < len(self._scratch) // 4:
            kept = self._end - self._start  # a frame start: move it to the front
            self._scratch[0:kept] = self._scratch[self._start : self._end]
            self._start, self._end = 0, kept
        return memoryview(self._scratch)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._size:
            self._filled += nbytes
        else:
            self._end += nbytes

    def next_frame(self) -> bytes | memoryview | None:
        """The next whole frame (without its prefix), or None until more arrives (or
        until memory is allowed). Raises FrameTooLarge for a size outside the limit;
        the stream is then lost."""
        if self._size:
            return self._large_frame()
        available = self._end - self._start
        if available < PREFIX_BYTES:
            return None
        size = frame_size(self._scratch[self._start : self._start + PREFIX_BYTES], self._max)
        body = self._start + PREFIX_BYTES
        if available - PREFIX_BYTES >= size:
            self._start = body + size
            with memoryview(self._scratch) as view:
                return bytes(view[body : body + size])
        if PREFIX_BYTES + size > len(self._scratch):
            # What came with the prefix stays in the scratch buffer until the frame's
            # own buffer is allowed; it is moved there then.
            self._size = size
            self._start = body
            self._want(min(size, max(self._min_step, 2 * (self._end - body))))
        return None

    def _large_frame(self) -> memoryview | None:
        own = self._own
        if own is None or self._filled < len(own):
            return None
        if len(own) < self._size:
            if not self._wanted:
                self._want(min(self._size - len(own), max(self._min_step, len(own))))
            return None
        frame = memoryview(own).toreadonly()
        self._own, self._size, self._filled = None, 0, 0
        self.held -= len(own)
        return frame

    # -- memory ------------------------------------------------------------------------

    def memory_wanted(self, ready: int = 0) -> int:
        """Bytes the large frame needs allocated before any more can be received;
        0 when a buffer can be offered. `ready`: bytes known to have arrived and wait
        to be received (in the kernel), which the allocation may cover at once, so a
        frame that arrives fast gets one buffer instead of a doubling series."""
        if self._allowed or not self._wanted:
            return 0
        if ready > self._wanted:
            room = self._size - len(self._own or b"")
            self._wanted = min(room, ready + self._have())
        return self._wanted

    def allow(self) -> int:
        """Allows the wanted allocation (made on the next `get_buffer`, when no view of
        the buffer is held any more); returns its size."""
        wanted = self.memory_wanted()
        self._allowed = wanted > 0
        self.held += wanted
        return wanted

    def _have(self) -> int:
        """Bytes of the large frame received and not yet in its own buffer."""
        return self._end - self._start if self._own is None else 0

    def _want(self, nbytes: int) -> None:
        self._wanted = nbytes
        self._allowed = False

    def _grow(self) -> None:
        n, self._wanted, self._allowed = self._wanted, 0, False
        if self._own is None:
            have = self._end - self._start
            self._own = bytearray(n)
            self._own[:have] = self._scratch[self._start : self._end]
            self._filled = have
            self._start = self._end = 0
            return
        while n:
            step = min(n, len(_ZEROS))
            self._own += _ZEROS[:step]
            n -= step

    def discard(self) -> None:
        """The stream is gone: let go of its buffers now (what it cut short stays
        known to `partial`); frames already taken out are not affected."""
        self._scratch = bytearray()
        self._own = None
        self._wanted, self._allowed, self.held = 0, False, 0
        self._end = self._start + min(self._end - self._start, PREFIX_BYTES)  # for `partial`

    @property
    def partial(self) -> str | None:
        """What an end of stream now would cut short: "prefix", "frame" or nothing."""
        if self._size:
            return "frame"
        available = self._end - self._start
        if available == 0:
            return None
        return "prefix" if available < PREFIX_BYTES else "frame"
