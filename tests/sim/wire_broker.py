"""A scripted in-memory Pulsar broker for one topic, met at the `Connection`
interface, so the real `kop.pulsar.wire` producer and reader code runs against it
on the simulated clock.

It keeps what decides whether an acknowledged record can be lost or written
twice, as Pulsar 4.0 does (PersistentTopic.publishMessage, MessageDeduplication,
ServerCnx, Producer):

- deduplication per producer name: `pushed` (the highest sequence id handed to
  the log) and `persisted` (the highest stored). A SEND at or below `pushed` is a
  duplicate: at or below `persisted` it gets a receipt with ledger/entry -1:-1,
  otherwise (pushed, not persisted yet) a SEND_ERROR PersistenceError;
- PRODUCER answers `last_sequence_id` = `pushed` and the topic's epoch; a
  PRODUCER for an id the connection still holds is answered "already present"
  without either; access modes, the topic's epoch and fencing are
  `wire_access.TopicAccess`'s; a producer fenced out refuses every SEND with
  PersistenceError "Producer is closed" until its writes are done, then goes
  without a word to its client (Pulsar 4.0.7);
- an unload closes every producer with CLOSE_PRODUCER (the epoch stays); for
  `keepAliveIntervalSeconds` after, a SEND for that producer id on that connection
  is ignored without a word, even once the id is attached again and gone again
  (ServerCnx's `recentlyClosedProducers`);
- CLOSE_PRODUCER takes effect only once the producer's writes are done (the broker
  waits for pending publish acks);
- a SEND for a producer id the connection does not hold closes the connection;
- a connection's producers and consumers go when the broker notices it closed,
  which may be later than the client did (`notice_delay`).

Several clients (`session(client)`) each have a connection of their own. The
client side of each connection is the real `HandlerRegistry`,
`PendingRequests` (so request timeouts are the real ones) and `CommandDispatcher`.
Every message in either direction is delivered by `call_soon`: in order, but
never inside the call that sent it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kop.pulsar.wire.dispatch import CommandDispatcher
from kop.pulsar.wire.errors import ConnectionClosedError, PulsarWireError
from kop.pulsar.wire.frames import Frame, FrameDecoder
from kop.pulsar.wire.handlers import ConsumerHandler, HandlerRegistry, ProducerHandler
from kop.pulsar.wire.pending import PendingRequests
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.session import Session
from tests.sim.wire_access import Attached, Refused, TopicAccess

T = pb.BaseCommand.Type
U64_MINUS_1 = (1 << 64) - 1  # -1 as Pulsar writes it in a uint64
LEDGER = 7
KEEPALIVE_S = 30.0  # the broker's keepAliveIntervalSeconds


@dataclass(slots=True)
class Stored:
    name: str
    seq: int
    payload: bytes


@dataclass(slots=True)
class _Write:
    conn: SimConnection
    producer_id: int
    name: str
    seq: int
    payload: bytes
    drop_receipt: bool = False


class _NoHandshake:
    """The dispatcher's handshake: these connections are born connected."""

    def on_connected(self, connected: pb.CommandConnected) -> None:
        pass

    def on_stray_error(self, request_id: int, error: PulsarWireError) -> None:
        pass

    def fail(self, error: PulsarWireError) -> None:
        pass


class SimConnection:
    """What `Connection` offers producers and readers, wired to a `SimBroker`."""

    def __init__(
        self, broker: SimBroker, number: int, operation_timeout_s: float, client: int = 0
    ) -> None:
        loop = asyncio.get_running_loop()
        self.broker = broker
        self.number = number
        self.client = client
        self.address = f"sim-broker:{number}"
        self.max_message_size = 5 * 1024 * 1024
        self.sent: list[pb.BaseCommand] = []  # every command the client sent, in order
        self._loop = loop
        self._closed: PulsarWireError | None = None
        self._close_callbacks: list[Callable[[SimConnection], None]] = []
        self._pending = PendingRequests(loop, self.address, operation_timeout_s)
        self._handlers = HandlerRegistry()
        self._dispatcher = CommandDispatcher(
            self._handlers, self._pending, _NoHandshake(), self.address,  # type: ignore[arg-type]
            self.send, self.abort,
        )  # fmt: skip

    # -- the Connection interface -------------------------------------------------------

    @property
    def is_closed(self) -> bool:
        return self._closed is not None

    @property
    def writable(self) -> bool:
        return self._closed is None

    @property
    def is_idle(self) -> bool:
        return not (self._handlers.producers or self._handlers.consumers or len(self._pending))

    def add_close_callback(self, callback: Callable[[SimConnection], None]) -> None:
        if self._closed is not None:
            callback(self)
        else:
            self._close_callbacks.append(callback)

    def new_request_id(self) -> int:
        return self._pending.new_id()

    async def request(self, command: pb.BaseCommand, request_id: int) -> pb.BaseCommand:
        if self._closed is not None:
            raise self._closed
        return await self._pending.call(command, request_id, self.send)

    def send(self, command: pb.BaseCommand) -> None:
        if self._closed is None:
            self.sent.append(command)
            self._loop.call_soon(self.broker.receive, self, command, b"")

    def write_frames(self, frames: Iterable[tuple[bytes, bytes | memoryview]]) -> None:
        if self._closed is not None:
            return
        decoder = FrameDecoder()
        for head, payload in frames:
            decoder.feed(head)
            decoder.feed(payload)
            frame = decoder.next_frame()
            assert frame is not None and frame.payload is not None
            self.sent.append(frame.command)
            self._loop.call_soon(self.broker.receive, self, frame.command, frame.payload)

    def close(self, reason: str = "closed by the client") -> None:
        self._shut(ConnectionClosedError(f"connection to {self.address} {reason}"))

    def abort(self, error: PulsarWireError) -> None:
        self._shut(error)

    def register_producer(self, producer_id: int, handler: ProducerHandler) -> None:
        self._handlers.register_producer(producer_id, handler)

    def unregister_producer(self, producer_id: int, handler: ProducerHandler) -> None:
        self._handlers.unregister_producer(producer_id, handler)

    def register_consumer(self, consumer_id: int, handler: ConsumerHandler) -> None:
        self._handlers.register_consumer(consumer_id, handler)

    def unregister_consumer(self, consumer_id: int, handler: ConsumerHandler) -> None:
        self._handlers.unregister_consumer(consumer_id, handler)

    # -- simulation ---------------------------------------------------------------------

    def commands(self, kind: int) -> list[pb.BaseCommand]:
        return [c for c in self.sent if c.type == kind]

    def deliver(self, command: pb.BaseCommand) -> None:
        """From the broker, in order, on a later loop step."""
        self._loop.call_soon(self._dispatch, command)

    def _dispatch(self, command: pb.BaseCommand) -> None:
        if self._closed is None:
            self._dispatcher.dispatch(Frame(command))

    def _shut(self, error: PulsarWireError) -> None:
        if self._closed is not None:
            return
        self._closed = error
        self._pending.fail_all(error)
        for handler in self._handlers.close(error):
            handler.on_connection_closed(self)  # type: ignore[arg-type]
        for callback in self._close_callbacks:
            callback(self)
        self._close_callbacks.clear()
        self.broker.lost(self)


@dataclass
class SimBroker:
    """One topic with deduplication on. Knobs script the faults; `log` is what it
    stored, in order."""

    operation_timeout_s: float = 10.0
    persist_delay: float | None = 0.001  # None: writes wait for `persist()`
    notice_delay: float = 0.0  # how late the broker notices a closed connection
    answer_subscribe: bool = True
    subscribe_errors: int = 0  # the next SUBSCRIBEs answered ServiceNotReady
    log: list[Stored] = field(default_factory=list)
    pushed: dict[str, int] = field(default_factory=dict)
    persisted: dict[str, int] = field(default_factory=dict)
    connections: list[SimConnection] = field(default_factory=list)
    producers: dict[tuple[int, int], Attached] = field(default_factory=dict)
    access: TopicAccess = field(default_factory=TopicAccess)
    admitted: list[int] = field(default_factory=list)  # the client of each producer admitted
    # Each fencing PRODUCER as it arrived: its client, what was pushed, admissions before.
    fencings: list[tuple[int, dict[str, int], int]] = field(default_factory=list)
    consumers: set[tuple[int, int]] = field(default_factory=set)
    # The next SENDs answered `send_error`, not pushed. A PersistenceError that is
    # not about a duplicate means a fenced topic: every later SEND on the same
    # connection is refused too, so nothing after the refused entry is pushed.
    send_errors: int = 0
    send_error: pb.ServerError = pb.PersistenceError
    drop_receipts: int = 0  # the next stored writes' receipts are lost
    _writes: deque[_Write] = field(default_factory=deque)
    _names: itertools.count[int] = field(default_factory=itertools.count)
    errors: list[Exception] = field(default_factory=list)
    _refusing: set[int] = field(default_factory=set)  # connections refusing every SEND
    _recently_closed: dict[tuple[int, int], float] = field(default_factory=dict)  # until when
    _gone: set[int] = field(default_factory=set)  # connections the broker saw close
    _timer: asyncio.TimerHandle | None = None

    # -- the client side ------------------------------------------------------------------

    def connection(self, client: int = 0) -> SimConnection:
        """`client`'s open connection to this broker, opened when it has none (the pool)."""
        mine = [c for c in self.connections if c.client == client]
        if mine and not mine[-1].is_closed:
            return mine[-1]
        conn = SimConnection(self, len(self.connections), self.operation_timeout_s, client)
        self.connections.append(conn)
        return conn

    def session(self, client: int = 0) -> SimSession:
        return SimSession(self, client)

    # -- faults and steps ------------------------------------------------------------------

    def cut(self, client: int = 0) -> None:
        """The network drops `client`'s current connection (both ends see it)."""
        mine = [c for c in self.connections if c.client == client]
        if mine and not mine[-1].is_closed:
            mine[-1].close("cut by the network")

    def unload(self) -> None:
        """The topic moves (an admin unload): what was pushed is stored, then every
        producer is closed with CLOSE_PRODUCER; the topic's epoch stays."""
        self.persist(len(self._writes))
        for key in list(self.producers):
            conn = next(c for c in self.connections if c.number == key[0])
            self._remove(key)
            self._recently_closed[key] = asyncio.get_running_loop().time() + KEEPALIVE_S
            close = pb.CommandCloseProducer(producer_id=key[1], request_id=U64_MINUS_1)
            self._reply(conn, pb.BaseCommand(type=T.CLOSE_PRODUCER, close_producer=close))

    def persist(self, count: int = 1) -> None:
        """Stores the oldest `count` pushed writes and answers them."""
        for _ in range(count):
            if not self._writes:
                return
            self._store(self._writes.popleft())

    def fail_writes(self) -> None:
        """The log fails every pending write (a lost bookie): each gets a
        PersistenceError and deduplication forgets them (Pulsar resets `pushed`)."""
        writes, self._writes = self._writes, deque()
        for write in writes:
            self._done(write)
            self._reply(write.conn, _send_error(write.producer_id, write.seq, "write failed"))
        for name, seq in self.persisted.items():
            self.pushed[name] = seq
        for name in list(self.pushed):
            if name not in self.persisted:
                del self.pushed[name]

    @property
    def pending_writes(self) -> int:
        return len(self._writes)

    def stored(self, name: str) -> list[int]:
        return [s.seq for s in self.log if s.name == name]

    # -- the broker -------------------------------------------------------------------------

    def receive(self, conn: SimConnection, command: pb.BaseCommand, payload: bytes) -> None:
        try:
            self._receive(conn, command, payload)
        except Exception as exc:  # a bug of the model: the test must fail, not log it
            self.errors.append(exc)
            raise

    def _receive(self, conn: SimConnection, command: pb.BaseCommand, payload: bytes) -> None:
        if conn.number in self._gone:
            return  # the broker noticed it closed: nothing more arrives
        kind = command.type
        if kind == T.PRODUCER:
            self._producer(conn, command.producer)
        elif kind == T.SEND:
            self._send(conn, command.send, payload)
        elif kind == T.CLOSE_PRODUCER:
            self._close_producer(conn, command.close_producer)
        elif kind == T.SUBSCRIBE:
            self._subscribe(conn, command.subscribe)
        elif kind == T.CLOSE_CONSUMER:
            self.consumers.discard((conn.number, command.close_consumer.consumer_id))
            self._success(conn, command.close_consumer.request_id)

    def lost(self, conn: SimConnection) -> None:
        if self.notice_delay:
            asyncio.get_running_loop().call_later(self.notice_delay, self._forget, conn)
        else:
            self._forget(conn)

    def _forget(self, conn: SimConnection) -> None:
        self._gone.add(conn.number)
        for key in [k for k in self.producers if k[0] == conn.number]:
            self._remove(key)
        self.consumers = {k for k in self.consumers if k[0] != conn.number}

    def _remove(self, key: tuple[int, int]) -> None:
        if self.producers.pop(key, None) is not None:
            self.access.removed()

    def _producer(self, conn: SimConnection, create: pb.CommandProducer) -> None:
        key = (conn.number, create.producer_id)
        held = self.producers.get(key)
        if held is not None:  # ServerCnx: "Producer is already present on the connection"
            success = pb.CommandProducerSuccess(
                request_id=create.request_id, producer_name=held.name
            )
            self._reply(conn, pb.BaseCommand(type=T.PRODUCER_SUCCESS, producer_success=success))
            return
        name = create.producer_name or f"sim-{next(self._names)}"
        if create.producer_access_mode == pb.ExclusiveWithFencing:
            self.fencings.append((conn.client, dict(self.pushed), len(self.admitted)))
        try:
            epoch = self.access.admit(create, name, self._attached, self._fence_out)
        except Refused as refused:
            error = pb.CommandError(
                request_id=create.request_id, error=refused.code, message=refused.message
            )
            self._reply(conn, pb.BaseCommand(type=T.ERROR, error=error))
            return
        self.producers[key] = Attached(name, create.producer_access_mode)
        self.admitted.append(conn.client)
        success = pb.CommandProducerSuccess(
            request_id=create.request_id, producer_name=name,
            last_sequence_id=self.pushed.get(name, -1),
        )  # fmt: skip
        if epoch is not None:
            success.topic_epoch = epoch
        self._reply(conn, pb.BaseCommand(type=T.PRODUCER_SUCCESS, producer_success=success))

    def _attached(self) -> list[tuple[Attached, bool]]:
        return [(p, key[0] not in self._gone) for key, p in self.producers.items()]

    def _fence_out(self, producer: Attached) -> None:
        """Producer.close(true): it goes at once without pending writes, else after them."""
        producer.closed = True
        if producer.writes == 0:
            key = next(k for k, p in self.producers.items() if p is producer)
            self._remove(key)

    def _send(self, conn: SimConnection, send: pb.CommandSend, payload: bytes) -> None:
        key = (conn.number, send.producer_id)
        producer = self.producers.get(key)
        until = self._recently_closed.get(key, 0.0)
        if producer is None and asyncio.get_running_loop().time() < until:
            return  # ServerCnx: "the producer was recently closed ... Ignoring message"
        if producer is None:  # ServerCnx: "the producer is not ready ... Closing the connection"
            conn.close("closed by the broker: SEND for an unknown producer")
            self._forget(conn)
            return
        seq = send.sequence_id
        refusing = conn.number in self._refusing
        if producer.closed:  # fenced out, its writes not all done yet
            self._reply(conn, _send_error(send.producer_id, seq, "Producer is closed"))
            return
        if self.send_errors or refusing:
            if not refusing:
                self.send_errors -= 1
                if self.send_error == pb.PersistenceError:
                    self._refusing.add(conn.number)
            self._reply(conn, _send_error(send.producer_id, seq, "refused", self.send_error))
            return
        name = producer.name
        if seq <= self.pushed.get(name, -1):
            if seq <= self.persisted.get(name, -1):  # Dup: completed(null, -1, -1)
                self._reply(conn, _receipt(send.producer_id, seq, U64_MINUS_1, U64_MINUS_1))
            else:  # Unknown: MessageDupUnknownException
                self._reply(conn, _send_error(send.producer_id, seq, "dup status unknown"))
            return
        self.pushed[name] = seq
        producer.writes += 1
        self._writes.append(_Write(conn, send.producer_id, name, seq, bytes(payload)))
        self._schedule()

    def _schedule(self) -> None:
        if self.persist_delay is not None and self._timer is None and self._writes:
            self._timer = asyncio.get_running_loop().call_later(self.persist_delay, self._tick)

    def _tick(self) -> None:
        self._timer = None
        self.persist(len(self._writes))
        self._schedule()

    def _store(self, write: _Write) -> None:
        self.log.append(Stored(write.name, write.seq, write.payload))
        self.persisted[write.name] = write.seq
        self._done(write)
        if self.drop_receipts:
            self.drop_receipts -= 1
            return
        entry = len(self.log) - 1
        self._reply(write.conn, _receipt(write.producer_id, write.seq, LEDGER, entry))

    def _done(self, write: _Write) -> None:
        key = (write.conn.number, write.producer_id)
        producer = self.producers.get(key)
        if producer is None or producer.name != write.name:
            return
        producer.writes -= 1
        if producer.writes == 0 and producer.close_request is not None:
            self._remove(key)
            self._success(write.conn, producer.close_request)
        elif producer.writes == 0 and producer.closed:
            self._remove(key)  # fenced out: gone without a word to its client

    def _close_producer(self, conn: SimConnection, close: pb.CommandCloseProducer) -> None:
        key = (conn.number, close.producer_id)
        producer = self.producers.get(key)
        if producer is not None and producer.writes:
            producer.close_request = close.request_id  # Producer.close waits for its acks
            return
        self._remove(key)
        self._success(conn, close.request_id)

    def _subscribe(self, conn: SimConnection, subscribe: pb.CommandSubscribe) -> None:
        if self.subscribe_errors:
            self.subscribe_errors -= 1
            error = pb.CommandError(
                request_id=subscribe.request_id, error=pb.ServiceNotReady, message="loading"
            )
            self._reply(conn, pb.BaseCommand(type=T.ERROR, error=error))
            return
        self.consumers.add((conn.number, subscribe.consumer_id))  # made, answered or not
        if self.answer_subscribe:
            self._success(conn, subscribe.request_id)

    def _success(self, conn: SimConnection, request_id: int) -> None:
        success = pb.CommandSuccess(request_id=request_id)
        self._reply(conn, pb.BaseCommand(type=T.SUCCESS, success=success))

    def _reply(self, conn: SimConnection, command: pb.BaseCommand) -> None:
        if not conn.is_closed:
            conn.deliver(command)


def _receipt(producer_id: int, seq: int, ledger: int, entry: int) -> pb.BaseCommand:
    receipt = pb.CommandSendReceipt(
        producer_id=producer_id, sequence_id=seq, highest_sequence_id=seq,
        message_id=pb.MessageIdData(ledgerId=ledger, entryId=entry),
    )  # fmt: skip
    return pb.BaseCommand(type=T.SEND_RECEIPT, send_receipt=receipt)


def _send_error(
    producer_id: int, seq: int, message: str, code: pb.ServerError = pb.PersistenceError
) -> pb.BaseCommand:
    error = pb.CommandSendError(
        producer_id=producer_id, sequence_id=seq, error=code, message=message
    )
    return pb.BaseCommand(type=T.SEND_ERROR, send_error=error)


class SimSession(Session):
    """The real session (ids, retries within the operation timeout) with the lookup
    and the pool replaced by the one simulated broker."""

    def __init__(self, broker: SimBroker, client: int = 0) -> None:
        super().__init__(
            "pulsar://sim-broker:6650",
            operation_timeout_s=broker.operation_timeout_s,
            keepalive_s=30.0,
        )
        self.broker = broker
        self.client = client

    async def connect_topic(self, topic: str) -> SimConnection:  # type: ignore[override]
        await asyncio.sleep(0)  # a lookup is never instant
        return self.broker.connection(self.client)
