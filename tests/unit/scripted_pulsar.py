"""A scripted broker for `WireReader` unit tests: it answers SUBSCRIBE, honours FLOW
permits as a broker does (an entry is sent while any permit is left, a batch uses
its message count), and can send corrupt frames or drop the consumer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kop.pulsar.wire.errors import CorruptEntryError
from kop.pulsar.wire.frames import CorruptFrameError, Frame
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.read_ahead import ReadAheadBudget
from kop.pulsar.wire.reader import WireReader

T = pb.BaseCommand.Type
TOPIC = "persistent://public/default/t-partition-0"
R = TypeVar("R")


@dataclass
class Stored:
    """One entry of the scripted topic."""

    metadata: pb.MessageMetadata
    payload: bytes
    corrupt_times: int = 0  # deliveries that fail their checksum before a good one


def entry(payload: bytes, **meta: Any) -> Stored:
    return Stored(
        pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, **meta), payload
    )


@dataclass
class Broker:
    """One topic in one ledger (entry i at (1, i)) behind one connection."""

    entries: list[Stored] = field(default_factory=list)
    address: str = "broker:6650"
    is_closed: bool = False
    permits: int = 0
    sent_bytes: int = 0
    subscribes: list[tuple[int, tuple[int, int] | None]] = field(default_factory=list)
    flows: list[int] = field(default_factory=list)
    _consumer: tuple[int, Any] | None = None
    _cursor: int = 0
    _ids: int = 0
    _pumping: bool = False
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.idle.set()

    def new_request_id(self) -> int:
        self._ids += 1
        return self._ids

    def register_consumer(self, consumer_id: int, handler: Any) -> None:
        self._consumer = (consumer_id, handler)

    def unregister_consumer(self, consumer_id: int, handler: Any) -> None:
        if self._consumer is not None and self._consumer[0] == consumer_id:
            self._consumer = None

    def send(self, command: pb.BaseCommand) -> None:
        if command.type == T.FLOW:
            self.flows.append(command.flow.messagePermits)
            self.permits += command.flow.messagePermits
            self._pump()
        elif command.type == T.CLOSE_CONSUMER:
            self._close(command.close_consumer.consumer_id)

    def _close(self, consumer_id: int) -> None:
        if self._consumer is not None and self._consumer[0] == consumer_id:
            self._consumer = None

    async def request(self, command: pb.BaseCommand, request_id: int) -> pb.BaseCommand:
        if command.type == T.SUBSCRIBE:
            sub = command.subscribe
            start = None
            if sub.HasField("start_message_id"):
                start = (sub.start_message_id.ledgerId, sub.start_message_id.entryId)
            self.subscribes.append((sub.consumer_id, start))
            self._cursor = 0 if start is None else start[1]
            self.permits = 0  # a new consumer starts with none
        elif command.type == T.CLOSE_CONSUMER:
            self._close(command.close_consumer.consumer_id)
        elif command.type == T.GET_LAST_MESSAGE_ID:
            last = pb.MessageIdData(ledgerId=1, entryId=len(self.entries) - 1)
            answer = pb.CommandGetLastMessageIdResponse(last_message_id=last, request_id=request_id)
            return pb.BaseCommand(
                type=T.GET_LAST_MESSAGE_ID_RESPONSE, getLastMessageIdResponse=answer
            )
        return pb.BaseCommand(type=T.SUCCESS, success=pb.CommandSuccess(request_id=request_id))

    def drop_consumer(self) -> None:
        """As CLOSE_CONSUMER from the broker (a topic unload)."""
        if self._consumer is not None:
            _, handler = self._consumer
            self._consumer = None
            handler.on_closed_by_broker()

    def _pump(self) -> None:
        if not self._pumping:
            self._pumping = True
            self.idle.clear()
            asyncio.get_running_loop().call_soon(self._deliver)

    def _deliver(self) -> None:
        """One entry per loop turn, as frames come off a socket."""
        self._pumping = False
        if self._consumer is None or self.permits <= 0 or self._cursor >= len(self.entries):
            self.idle.set()
            return
        consumer_id, handler = self._consumer
        i = self._cursor
        self._cursor += 1
        stored = self.entries[i]
        message = pb.CommandMessage(
            consumer_id=consumer_id, message_id=pb.MessageIdData(ledgerId=1, entryId=i)
        )
        command = pb.BaseCommand(type=T.MESSAGE, message=message)
        self.permits -= stored.metadata.num_messages_in_batch
        self.sent_bytes += len(stored.payload)
        if stored.corrupt_times > 0:
            stored.corrupt_times -= 1
            handler.on_corrupt(
                CorruptFrameError("corrupt MESSAGE: checksum 0x1, frame says 0x2", command)
            )
        else:
            handler.on_message(Frame(command, stored.metadata, stored.payload))
        self._pump()


class Session:
    """What a reader needs of `kop.pulsar.wire.session.Session`."""

    operation_timeout_s = 10.0

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._ids = 0

    def new_id(self) -> int:
        self._ids += 1
        return self._ids

    async def connect_topic(self, topic: str) -> Broker:
        return self.broker

    async def within_timeout(self, what: str, attempt: Callable[[], Awaitable[R]]) -> R:
        return await attempt()

    def track(self, resource: Any) -> None:
        pass

    def forget(self, resource: Any) -> None:
        pass


async def open_reader(
    broker: Broker,
    *,
    budget: ReadAheadBudget | None = None,
    receiver_queue: int = 1000,
    start: tuple[int, int] | None = None,
    max_uncompressed_bytes: int = 64 << 20,
) -> WireReader:
    reader = WireReader(
        Session(broker),  # type: ignore[arg-type]
        TOPIC,
        start,
        receiver_queue=receiver_queue,
        budget=budget,
        max_uncompressed_bytes=max_uncompressed_bytes,
    )
    await reader.start()
    return reader


async def settle(*brokers: Broker) -> None:
    """Until no broker has anything it may still send."""
    async with asyncio.timeout(5):
        for broker in brokers:
            await asyncio.sleep(0)
            await broker.idle.wait()


__all__ = ["Broker", "CorruptEntryError", "Stored", "entry", "open_reader", "settle"]
