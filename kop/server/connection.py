"""One Kafka client connection, its asyncio side: framing, in-order pipelining, limits.

What each request frame means (run a handler, the SASL exchange, answer without a
handler, close) is decided by the protocol core, a pure state machine
(`kafka_connection.py`); this side moves frames and answers and applies the budgets.

Requests are read and their ordered part handled one after another (so
writes from one connection reach Pulsar in the order sent); their slow parts
(Pulsar acknowledgements, long-poll fetches) overlap, up to
`max_inflight` of them, and responses are written strictly in request order
(`AnswerWriter`). A full in-flight queue stops reading from the socket: that is
back-pressure. A frame is given back to the shared request budget once it is
dispatched (`frame_done`). kop's own reasons to close a connection are logged
(throttled) and reported to the observer.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from dataclasses import dataclass
from typing import Any

from kop.aio.futures import retrieve
from kop.api.connection_ends import ConnectionEnds
from kop.api.context import AnswerRoom, Namespace, RequestContext, Services
from kop.api.dispatch import ROUTES
from kop.api.produce_order import PartitionChains
from kop.api.routes import Now, Writing
from kop.protocol.error_replies import top_level_error_response
from kop.protocol.errors import ErrorCode
from kop.protocol.frames import FrameTooLarge
from kop.protocol.messages import (
    ApiKey,
    Request,
    RequestHeader,
    response_schema,
)
from kop.protocol.versions import downgrade
from kop.sasl.gatekeeper import MAX_UNAUTHENTICATED_FRAME, Gatekeeper, ListenerSecurity
from kop.sasl.session import Answer
from kop.sasl.session import Body as SaslBody
from kop.server.answers import AnswerWriter, Item
from kop.server.closing import (
    BAD_REQUEST,
    EVICTED,
    FRAME_TOO_LARGE,
    IDLE,
    INVALID,
    RECEIVE_TIMEOUT,
    SESSION_EXPIRED,
    SETUP_TIMEOUT,
    ThrottledLog,
)
from kop.server.idle_watch import IdleWatch
from kop.server.kafka_connection import Authenticate, Close, KafkaConnection, Reply
from kop.server.log_context import PEER, PRINCIPAL, REQUEST
from kop.server.loop_time import Timed
from kop.server.memory import AnswerMemory
from kop.server.ports import FrameSource, RequestObserver, ResponseSink
from kop.server.quota_gate import QuotaGate
from kop.server.setup_deadline import SetupDeadline
from kop.server.stream import Evicted, ReceiveTimeout

log = logging.getLogger(__name__)
_closes = ThrottledLog(log)

__all__ = ["Connection", "FrameSource", "Limits", "RequestObserver", "ResponseSink"]


@dataclass(frozen=True, slots=True)
class Limits:
    max_request_bytes: int
    max_inflight: int
    idle_timeout_s: float
    request_receive_timeout_s: float = 60.0
    response_send_timeout_s: float = 60.0
    max_connections: int = 1000
    max_queued_request_bytes: int = 64 << 20
    max_queued_response_bytes: int = 128 << 20
    # Per client address (kop.server.addresses): connections held, their overrides in
    # Kafka's `host:count,...` (names resolved when the listener starts), and
    # connections opened a second.
    max_connections_per_ip: int = 200
    max_connections_per_ip_overrides: str = ""
    max_connection_creation_rate_per_ip: float = 50.0
    # From accept to the first whole request (on a SASL listener: to authentication).
    connection_setup_timeout_s: float = 10.0
    # Namespaces other than the connection's that one request may name (full names).
    max_namespaces_per_request: int = 100


class _Ended(Exception):
    """The protocol core closed the connection (`Close`): what is in flight is still
    answered."""

    def __init__(self, close: Close) -> None:
        super().__init__(close.why)
        self.reason = close.reason


# How a read loop that raised ends: the reason counted, and whether what is already
# in flight is still answered (an evicted connection's client is gone).
_ENDINGS: dict[type[Exception], tuple[str, bool]] = {
    FrameTooLarge: (FRAME_TOO_LARGE, True),
    ReceiveTimeout: (RECEIVE_TIMEOUT, True),
    Evicted: (EVICTED, False),
}
_ENDS: tuple[type[Exception], ...] = (*_ENDINGS, _Ended)


def _ending(exc: Exception) -> tuple[str, bool]:
    if isinstance(exc, _Ended):
        return exc.reason, True
    return next(v for t, v in _ENDINGS.items() if isinstance(exc, t))


class Connection:
    def __init__(
        self,
        reader: FrameSource,
        writer: ResponseSink,
        services: Services,
        namespace: Namespace,
        limits: Limits,
        observer: RequestObserver,
        answers: AnswerMemory | None = None,
        gate: Gatekeeper | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._services = services
        self._gate = gate or Gatekeeper(ListenerSecurity("PLAINTEXT", namespace))
        self._gate.on_expiry = self._expired
        if self._gate.authenticating:
            reader.limit_frames(min(limits.max_request_bytes, MAX_UNAUTHENTICATED_FRAME))
        self._core = KafkaConnection(lambda: self._gate.authenticating)
        self._limits = limits
        self._observer = observer
        memory = answers or AnswerMemory(limits.max_queued_response_bytes)
        self._quota = QuotaGate(services.quotas.throttles, observer)
        self._answers = AnswerWriter(writer, memory, observer, self._quota)
        self._chains = PartitionChains()  # produce begins still running, per partition
        self._ends = ConnectionEnds()  # what the client opened that ends with it
        self._stopping = False
        self._peer: str | None = None
        self._setup = SetupDeadline(limits.connection_setup_timeout_s)  # runs from accept
        self._idle = IdleWatch(limits.idle_timeout_s, self._reader.feed_eof)

    @property
    def peer(self) -> str:
        """host:port of the client (known once the socket is attached)."""
        if self._peer is None:
            peer = self._writer.get_extra_info("peername")
            if peer is None:
                return "?"
            self._peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        return self._peer

    def abort(self) -> None:
        """Shutdown past its grace: close now, dropping answers not sent."""
        self._writer.abort()

    def stop_reading(self) -> None:
        """Shutdown: read no further requests; those in flight still get answers."""
        self._stopping = True
        self._reader.feed_eof()

    async def run(self) -> None:
        """Read and write side by side. Whichever ends first decides: a shutdown or a
        request kop must refuse still answers what came before it; a peer that went
        away or a write that failed ends both sides at once, and what was in flight
        is dropped (writes to Pulsar still complete: the log owns them)."""
        self._observer.connection_change(1)
        self._setup.arm(self._setup_expired)
        queue: asyncio.Queue[Item | None] = asyncio.Queue(self._limits.max_inflight)
        writer_task = asyncio.create_task(self._answers.run(queue))
        reader_task = asyncio.create_task(self._read_loop(queue))
        try:
            await asyncio.wait({reader_task, writer_task}, return_when=asyncio.FIRST_COMPLETED)
            if reader_task.done() and not reader_task.cancelled() and reader_task.result():
                await queue.put(None)
                await writer_task
        finally:
            self._setup.met()
            self._idle.close()
            for task in (reader_task, writer_task):
                task.cancel()
            await asyncio.gather(reader_task, writer_task, return_exceptions=True)
            _discard(queue)
            self._answers.room.close()
            await self._ends.run()
            self._gate.close()
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
            self._observer.connection_change(-1)

    async def _read_loop(self, queue: asyncio.Queue[Item | None]) -> bool:
        """Read and dispatch until the stream ends; True when what is in flight
        should still be answered."""
        try:
            while (frame := await self._read_frame()) is not None:
                await self._quota.muted()  # a throttled client's next request waits
                if not self._gate.authenticating:
                    self._setup.met()  # a whole request, on a listener without SASL
                # No request is handled while the client leaves its answers unread:
                # an answer made now would only wait in memory (Kafka mutes the
                # channel until the response is sent).
                await self._writer.writable()
                item = await self._dispatch(frame)
                self._quota.queued()
                if not self._gate.authenticating:
                    self._setup.met()  # SASL authentication done
                del frame
                self._reader.frame_done()
                try:
                    await queue.put(item)
                except asyncio.CancelledError:
                    _drop(item)  # never queued: `_discard` would not see it
                    raise
                del item  # the writer owns it now: gone once answered
                if (ending := self._core.ending) is not None:
                    raise _Ended(ending)  # the answer it queued was its last
        except _ENDS as exc:
            reason, answer_in_flight = _ending(exc)
            self._closing(reason, exc)
            return answer_in_flight
        except (ConnectionError, asyncio.IncompleteReadError):
            return False
        return self._stopping

    def _setup_expired(self) -> None:
        """Accepted `connection_setup_timeout_s` ago and still no whole request (or,
        on a SASL listener, not authenticated): it holds a connection slot others
        could use, so it is closed (a silent socket would otherwise keep it for the
        idle timeout)."""
        what = "authenticated" if self._gate.authenticating else "sent a whole request"
        timeout = self._setup.timeout_s
        self._closing(SETUP_TIMEOUT, Exception(f"not {what} {timeout}s after connecting"))
        self._reader.feed_eof()  # ends the read loop even before a TLS handshake is done
        self._writer.abort()

    def _expired(self) -> None:
        """The SASL session ended and was not renewed: no further request is read."""
        self._closing(SESSION_EXPIRED, Exception("SASL session expired"))
        self.stop_reading()

    def _closing(self, reason: str, why: Exception) -> None:
        self._observer.connection_closed(reason)
        # The text, not the exception: a kept log record would keep its traceback,
        # and through it the connection's buffers.
        _closes(logging.WARNING, reason, "closing %s: %s", self.peer, str(why))

    async def _read_frame(self) -> bytes | memoryview | None:
        """The next request frame; None at end of stream or after the idle timeout
        (no whole frame for that long: `IdleWatch` ends the stream then)."""
        frame = await self._idle.read(self._reader)
        if self._idle.fired:
            self._observer.connection_closed(IDLE)
            _closes(logging.INFO, IDLE, "closing idle connection %s", self.peer)
            return None
        if frame is None and self._reader.ended_inside_prefix:
            _closes(
                logging.WARNING,
                "truncated",
                "closing %s: stream ended inside a frame prefix",
                self.peer,
            )
        return frame

    async def _dispatch(self, frame: bytes | memoryview) -> Item:
        started = time.monotonic()
        decoding = time.perf_counter()
        event = self._core.receive(frame)
        decoded_s = time.perf_counter() - decoding
        if isinstance(event, Reply):  # answered without a handler
            if event.malformed is not None:  # throttled: garbage must not set the log's pace
                _closes(logging.WARNING, INVALID, "invalid request from %s: %s", self.peer,
                        event.malformed)  # fmt: skip
            return event.header, started, Now(event.body)
        if isinstance(event, Close):
            if event.header is not None:
                _log_context(self.peer, event.header)
            raise _Ended(event)
        request, gate = event.request, self._gate
        h, key = request.header, request.header.api_key
        _log_context(self.peer, h)
        if isinstance(event, Authenticate):
            answer = await _sasl(gate, self._quota, request, len(frame), decoded_s)
            if self._core.authenticated(answer) is None and not gate.authenticating:
                self._reader.limit_frames(self._limits.max_request_bytes)
            return request.header, started, Now(_written(answer.body, h))
        ctx = gate_context(gate, request.header, self.peer, self._answers.room, self._chains,
                           self._limits.max_namespaces_per_request, self._ends)  # fmt: skip
        PRINCIPAL.set(ctx.principal.role if ctx.principal is not None else "")
        route = ROUTES[ApiKey(key)]
        self._quota.asking(ctx.principal, h.client_id)
        await self._quota.admitted()
        timed = Timed(route.run(self._services, ctx, request.body))
        try:
            result = await timed
        except Exception as exc:
            log.exception("handler for api %d failed", request.header.api_key)
            reply = top_level_error_response(request.header, ErrorCode.unknown_server_error)
            if reply is None:
                raise _Ended(Close(BAD_REQUEST, f"handler failed: {exc}")) from exc
            return request.header, started, Now(reply)
        finally:
            self._quota.dispatched(key, len(frame), decoded_s + timed.seconds)
        return request.header, started, result


def _log_context(peer: str, h: RequestHeader) -> None:
    """Who and what this request's log lines are for (kop.ops.log_format)."""
    PEER.set(peer)
    REQUEST.set((h.api_key, h.api_version, h.correlation_id, h.client_id or ""))


async def _sasl(
    gate: Gatekeeper, quota: QuotaGate, request: Request, frame_bytes: int, decoded_s: float
) -> Answer:
    """A SASL request, answered by the gate; once it signs the client in, the exchange
    is charged to the user it signed in (as a request on its quota)."""
    h = request.header
    timed = Timed(gate.answer(h.api_key, request.body))
    answer = await timed
    if not gate.authenticating:
        quota.asking(gate.principal, h.client_id)
        quota.dispatched(h.api_key, frame_bytes, decoded_s + timed.seconds)
    return answer


def _written(body: SaslBody, h: RequestHeader) -> Any:
    """A SASL answer (in the newest version) at the version the client speaks."""
    return downgrade(body, response_schema(h.api_key, h.api_version), ApiKey(h.api_key))


def gate_context(
    gate: Gatekeeper, header: RequestHeader, peer: str, room: AnswerRoom, chains: PartitionChains,
    max_namespaces: int, ends: ConnectionEnds,
) -> RequestContext:  # fmt: skip
    """What a handler knows of the request's connection: who is asking (as the gate
    authenticated it), from where, through which listener, and its budgets."""
    return RequestContext(
        gate.namespace, header.client_id, header.api_version, "/" + peer.rsplit(":", 1)[0],
        room, chains, gate.security.name, gate.principal, gate.access, gate.security.system,
        max_namespaces=max_namespaces, ends=ends,
    )  # fmt: skip


def _discard(queue: asyncio.Queue[Item | None]) -> None:
    """Drop answers nobody will read: close pending coroutines (long polls) so they
    leave nothing behind; tasks (writes the log owns) run on to completion."""
    while not queue.empty():
        item = queue.get_nowait()
        if item is not None:
            _drop(item)


def _drop(item: Item) -> None:
    phase = item[2]
    if not isinstance(phase, Writing):
        return
    if inspect.iscoroutine(phase.answer):
        phase.answer.close()
    elif isinstance(phase.answer, asyncio.Future):
        phase.answer.add_done_callback(retrieve)
