"""A connection's answers, written strictly in request order.

Results are resolved one after another (a long-poll fetch runs only once the
answers before it are out), encoded, written, and drained before the next one is
made, so a client that stops reading holds at most one answer past the socket's
high-water mark, and that one counts against the answer budget all connections
share (`AnswerMemory`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping

from kop.api.routes import Now, Written
from kop.protocol.error_counts import error_counts
from kop.protocol.frame_pieces import Frame, frame_size
from kop.protocol.messages import RequestHeader, encode_response_frame
from kop.server.closing import EVICTED, SEND_TIMEOUT, ThrottledLog
from kop.server.loop_time import Timed
from kop.server.memory import EVICT_IDLE_S, AnswerMemory
from kop.server.ports import RequestObserver, ResponseSink
from kop.server.quota_gate import QuotaGate
from kop.server.stream import SendStalled

log = logging.getLogger(__name__)
_closes = ThrottledLog(log)

# A fetch gets at least this much room (or what it asked for, if less) or none: under
# pressure it waits for room instead of answering in slivers.
CLAIM_FLOOR = 1 << 20

# A request's answer in the making: its header, when it arrived, and the answer at the
# client's version in its phase (kop.api.routes).
Item = tuple[RequestHeader, float, Written]
_NONE: Mapping[int, int] = {}  # what an answer that was never made reports


class AnswerRoom:
    """The share of the answer budget one connection's answer in the making holds:
    what a fetch claimed before reading, then the encoded answer until the socket
    took it. A connection makes one answer at a time, so one claim is enough.

    While an answer is being sent, the room is one of the budget's holders: idle
    when no byte of it left the socket lately, evicted then if others wait."""

    def __init__(self, memory: AnswerMemory, sink: ResponseSink) -> None:
        self._memory = memory
        self._sink = sink
        self._held = 0
        self._since = 0.0  # when the answer being sent last made progress
        self._unsent = 0  # and how much of it the socket had not taken then
        self.on_evict: Callable[[], None] = sink.abort

    def claim(self, want: int) -> int:
        """Room for an answer of up to `want` bytes (0: none now); replaces the
        previous claim."""
        self._memory.release(self._held)
        self._held = 0
        self._held = self._memory.claim(want, CLAIM_FLOOR)
        return self._held

    def freed(self) -> asyncio.Future[None]:
        """Resolved when the shared budget next gets bytes back."""
        return self._memory.freed()

    def keep(self, nbytes: int) -> None:
        """Of the claim, only `nbytes` were used (what was read)."""
        self.settle(min(nbytes, self._held))

    def settle(self, nbytes: int) -> None:
        """The answer is `nbytes` now (encoded, or 0 once sent)."""
        self._memory.release(self._held)
        self._memory.charge(nbytes)
        self._held = nbytes

    def sending(self) -> None:
        self._since = time.monotonic()
        self._unsent = self._sink.unsent()
        self._memory.holders.add(self)

    def sent(self) -> None:
        self._memory.holders.discard(self)
        self.settle(0)

    def idle_since(self) -> float:
        unsent = self._sink.unsent()
        if unsent < self._unsent:
            self._since, self._unsent = time.monotonic(), unsent
        return self._since

    def evict(self) -> None:
        self.on_evict()

    def close(self) -> None:
        self._memory.holders.discard(self)
        self.settle(0)


class AnswerWriter:
    def __init__(
        self, sink: ResponseSink, memory: AnswerMemory, observer: RequestObserver,
        quota: QuotaGate | None = None,
    ) -> None:  # fmt: skip
        self._sink = sink
        self._quota = quota or QuotaGate(None, observer)
        self.room = AnswerRoom(memory, sink)
        self.room.on_evict = self._evicted
        self._observer = observer

    @property
    def peer(self) -> str:
        peer = self._sink.get_extra_info("peername")
        return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)

    def _evicted(self) -> None:
        self._observer.connection_closed(EVICTED)
        _closes(
            logging.WARNING,
            EVICTED,
            "closing %s: its answer took no byte for %.0fs while others wait for memory",
            self.peer,
            EVICT_IDLE_S,
        )
        self._sink.abort()

    async def run(self, queue: asyncio.Queue[Item | None]) -> None:
        # Nothing of an answer is kept while the next is awaited: a connection that
        # goes quiet would otherwise hold its last answer (up to a whole fetch) for
        # as long as it stays open.
        while (item := await queue.get()) is not None:
            try:
                frame = await self._encoded(item)
            except Exception:
                self._sink.close()
                return
            del item
            if frame is None:  # acks=0 produce: Kafka sends no response
                continue
            self.room.settle(frame_size(frame))
            self._sink.write(frame)
            del frame
            self.room.sending()
            try:
                await self._sink.drain()
            except ConnectionError:
                return
            except SendStalled as exc:
                self._observer.connection_closed(SEND_TIMEOUT)
                _closes(logging.WARNING, SEND_TIMEOUT, "closing %s: %s", self.peer, str(exc))
                return
            self.room.sent()

    async def _encoded(self, item: Item) -> Frame | None:
        header, started, phase = item
        ok = True
        errors: Mapping[int, int] = _NONE
        try:
            loop_s = 0.0
            if isinstance(phase, Now):
                answer = phase.answer
            else:  # the handler's slow part, and its time on the loop
                timed = Timed(phase.answer)
                resolved = await timed
                loop_s = timed.seconds
                answer = None if resolved is None else phase.write(resolved)
            answer = self._quota.answering(header.api_key, answer, loop_s)
            if answer is None:
                return None
            errors = error_counts(answer)
            return encode_response_frame(header, answer)
        except Exception:
            ok = False
            log.exception("cannot answer api %d v%d", header.api_key, header.api_version)
            raise
        finally:
            seconds = time.monotonic() - started
            self._observer.request_done(header.api_key, seconds, ok, errors)
