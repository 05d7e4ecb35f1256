"""One client socket as an asyncio protocol: request frames in, response bytes out.

Frames are received in place (`FrameAssembler`) and queued for the connection's
read loop. The socket is not read (Kafka "mutes" the channel) while any of these
holds, so what a connection makes kop hold is bounded:
- frames nobody has taken yet pass `read_ahead` bytes (small ones, from the scratch
  buffer) or 1 MiB (all);
- a large frame waits for memory from the budget all connections share
  (`RequestMemory`);
- answers back up: the transport's write buffer is over its high-water mark
  (the client is not reading them);
- the stream is stopped (a refused frame, a timeout, shutdown).

A frame whose first byte has arrived must be whole within `receive_timeout_s`, or
the stream ends (and the answer side, `SocketSink`, gives up on a client that takes
no answer byte for `send_timeout_s`); the connection then closes and what it held
is released.

The stream exists from accept, its socket only from `connection_made`: at once on a
plain listener, after the handshake on a TLS one (asyncio tells a TLS listener's
protocol nothing before, not even a failed handshake). `admit` is asked then, once
the client's address is known; a connection closed before its socket came (its
set-up deadline passed during the handshake) is not waited for, and the socket is
closed if it comes later.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable

from kop.protocol.frames import FrameAssembler, FrameTooLarge
from kop.server.gates import Muting, ReceiveDeadline, kernel_holds
from kop.server.memory import EVICT_IDLE_S, RequestMemory
from kop.server.sink import SendStalled, SocketSink

__all__ = ["Evicted", "Frame", "ReceiveTimeout", "RequestStream", "SendStalled"]

Frame = bytes | memoryview

log = logging.getLogger(__name__)

_AHEAD, _MEMORY, _ANSWERS, _STOPPED = Muting.AHEAD, Muting.MEMORY, Muting.ANSWERS, Muting.STOPPED
# Frames not yet taken, large ones included, beyond which a connection is not read:
# large frames are bounded in total by the shared budget, this keeps one connection
# from taking all of it (small frames have `read_ahead`, outside the budget).
_LARGE_AHEAD = 1 << 20
# What a queued small frame costs besides its bytes (the bytes object, its tuple and
# deque slot): a pipeline of 100-byte requests costs twice its payload.
_FRAME_OBJECT_BYTES = 100


class FrameQueue:
    """Frames received whole and not yet taken, and what they cost: all of them past
    `_LARGE_AHEAD`, or the small ones (from the scratch buffer, outside the shared
    budget) past `read_ahead`, and the stream is not read until half of it is taken."""

    def __init__(self, read_ahead: int) -> None:
        self._frames: collections.deque[tuple[Frame, int]] = collections.deque()
        self._read_ahead = read_ahead
        self._bytes = 0  # of the frames not yet taken ...
        self._small = 0  # ... those from the scratch buffer (not in the budget)

    def __bool__(self) -> bool:
        return bool(self._frames)

    def put(self, frame: Frame, charge: int) -> None:
        """A frame, and what of the shared budget it holds (0: a small one)."""
        self._frames.append((frame, charge))
        self._bytes += len(frame)
        if not charge:
            self._small += len(frame) + _FRAME_OBJECT_BYTES

    def take(self) -> tuple[Frame, int]:
        frame, charge = self._frames.popleft()
        self._bytes -= len(frame)
        if not charge:
            self._small -= len(frame) + _FRAME_OBJECT_BYTES
        return frame, charge

    @property
    def full(self) -> bool:
        return self._small > self._read_ahead or self._bytes > _LARGE_AHEAD

    @property
    def drained(self) -> bool:
        return self._small <= self._read_ahead // 2 and self._bytes <= _LARGE_AHEAD // 2


class ReceiveTimeout(Exception):
    """A frame did not arrive whole in time (a trickle, or a client gone quiet)."""


class Evicted(Exception):
    """The stream held request memory others wait for, and sent nothing for long."""


class RequestStream(SocketSink, asyncio.BufferedProtocol):
    def limit_frames(self, max_frame_bytes: int) -> None:
        """The largest frame accepted from the next one on."""
        self._frames.max_frame_bytes = max_frame_bytes

    def __init__(
        self,
        max_frame_bytes: int,
        read_ahead: int,
        memory: RequestMemory | None = None,
        receive_timeout_s: float = 60.0,
        send_timeout_s: float = 60.0,
    ) -> None:
        super().__init__(send_timeout_s)
        self._frames = FrameAssembler(max_frame_bytes)
        self._memory = memory if memory is not None else RequestMemory(1 << 62)
        self._queue = FrameQueue(read_ahead)
        self._charged = 0  # bytes of `memory` this stream holds
        self._taken = 0  # of those, the frame handed out and not yet done with
        self._completed = 0  # frames received whole so far
        self._deadline = ReceiveDeadline(self._loop, receive_timeout_s, self._late)
        self._error: Exception | None = None
        self._eof = False
        self._muting = Muting()
        self._waiting: asyncio.TimerHandle | None = None  # the next `_still_waiting`
        self._readable = asyncio.Event()
        self._fd = -1
        self._last_byte = self._loop.time()
        # Whether the socket, once attached, may stay (its address's limits).
        self.admit: Callable[[asyncio.BaseTransport], bool] = lambda transport: True
        self._abandoned = False  # closed before its socket was attached

    # -- protocol callbacks ------------------------------------------------------------

    def get_buffer(self, sizehint: int) -> memoryview:
        wanted = self._frames.memory_wanted()
        if wanted:
            # Reading while a frame waits for memory (never seen in the tests, seen
            # once under 1,000 hostile connections): take it past the budget rather
            # than fail the connection, and stop reading until the budget allows more.
            log.debug("socket %d read while its frame waits for memory", self._fd)
            self._memory.force(self, wanted)
            self._charged += self._frames.allow()
            self._muting.reasons &= ~_MEMORY
            self._deadline.resume()
        return self._frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self._last_byte = self._loop.time()
        frames = self._frames
        frames.buffer_updated(nbytes)
        try:
            held = frames.held
            while (frame := frames.next_frame()) is not None:
                charge = held - frames.held  # a large frame's own buffer, now whole
                held = frames.held
                if charge:
                    self._memory.finished(self)
                self._queue.put(frame, charge)
                self._completed += 1
        except FrameTooLarge as exc:
            self._stop(exc)
            return
        if self._queue.full:
            self._muting.add(_AHEAD)
        wanted = frames.memory_wanted()
        if wanted:
            wanted = frames.memory_wanted(kernel_holds(self._fd))
            if self._memory.take(self, wanted, self._memory_granted):
                self._charged += frames.allow()
            else:
                self._muting.add(_MEMORY)
                self._deadline.hold()
                self._recheck(EVICT_IDLE_S)
        self._deadline.watch(frames.partial is not None, self._completed)
        if self._queue:
            self._readable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if self._abandoned or not self.admit(transport):
            self._stop(ConnectionRefusedError("closed once accepted"))
            transport.close()
            return
        self._muting.transport = self._transport
        sock = transport.get_extra_info("socket")
        self._fd = sock.fileno() if sock is not None else -1

    def eof_received(self) -> bool:
        self._eof = True
        self._deadline.cancel()
        self._readable.set()
        # Half-closed: the answers to what came before are still written. TLS has no
        # half-close (asyncio closes it regardless, and warns when asked not to).
        return self.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._muting.transport = None
        self._eof = True
        self._deadline.cancel()
        if self._waiting is not None:
            self._waiting.cancel()
        self._memory.forget(self)
        self._memory.release(self._charged)
        self._charged = self._taken = 0
        # The memory goes now, not when the connection's tasks are done with the
        # stream: given back to the budget, it is soon another stream's.
        self._frames.discard()
        self._readable.set()

    def close(self) -> None:
        if self._transport is None:
            self._abandoned = True  # no socket yet: closed when it comes
        super().close()

    async def wait_closed(self) -> None:
        if not self._abandoned:  # else there may never be a socket to wait for
            await super().wait_closed()

    def _answers_backed_up(self, backed_up: bool) -> None:
        if backed_up:
            self._muting.add(_ANSWERS)
        else:
            self._muting.remove(_ANSWERS)

    # -- reading -----------------------------------------------------------------------

    async def next_frame(self) -> Frame | None:
        """The next request frame; None at the end of the stream. Raises FrameTooLarge
        or ReceiveTimeout, and ConnectionResetError when the stream ends inside a frame.
        Call `frame_done` once the frame is no longer needed."""
        while not self._queue:
            if self._error is not None:
                raise self._error
            if self._eof:
                if self._frames.partial == "frame":
                    raise ConnectionResetError("the stream ended inside a frame")
                return None
            self._readable.clear()
            await self._readable.wait()
        frame, charge = self._queue.take()
        if self._lost is None:  # once lost, everything was given back already
            self._taken += charge
        if self._queue.drained:
            self._muting.remove(_AHEAD)
        return frame

    def frame_done(self) -> None:
        """The frames taken so far are dispatched: their memory goes back to the budget
        (what decoding kept of them belongs to the requests now)."""
        if self._taken:
            taken, self._taken = self._taken, 0
            self._charged -= taken
            self._memory.release(taken)

    @property
    def ended_inside_prefix(self) -> bool:
        return self._eof and self._frames.partial == "prefix"

    def feed_eof(self) -> None:
        """Read nothing more (shutdown): the frames already queued are still served."""
        self._eof = True
        self._muting.add(_STOPPED)
        self._readable.set()

    def idle_since(self) -> float:
        return self._last_byte

    def evict(self) -> None:
        if self._transport is not None and self._lost is None:
            self._stop(Evicted(f"no byte for {EVICT_IDLE_S}s of a request holding memory"))
            self._transport.abort()

    def _still_waiting(self) -> None:
        """Waiting for memory: the holders that stopped are evicted, every so often."""
        self._waiting = None
        if self._muting.reasons & _MEMORY and self._lost is None:
            self._memory.evict_idle()
            self._recheck(EVICT_IDLE_S)

    def _recheck(self, after_s: float) -> None:
        if self._waiting is None:
            self._waiting = self._loop.call_later(after_s, self._still_waiting)

    def _memory_granted(self) -> None:
        self._charged += self._frames.allow()  # never after connection_lost: forgotten
        self._muting.remove(_MEMORY)
        self._deadline.resume()

    def _late(self) -> None:
        late = f"a frame did not arrive whole in {self._deadline.timeout_s}s"
        self._stop(ReceiveTimeout(late))

    def _stop(self, exc: Exception) -> None:
        self._error = exc
        self._deadline.cancel()
        self._muting.add(_STOPPED)
        self._readable.set()
