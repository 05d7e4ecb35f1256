"""A reader's subscription that the client stopped waiting for is closed on the
broker (kop/pulsar/wire/reader_subscription.py). The broker may still make a
subscribe it answers late (an overloaded broker answers late), and nothing
would ever close it: it would stay, with its cursor, for as long as the
connection. Issue 18: a Pulsar under load ran out of heap."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kop.pulsar.wire.errors import OperationTimeoutError, PulsarWireError
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.raw_entry import EARLIEST, Position
from kop.pulsar.wire.reader_subscription import ReaderSubscription

T = pb.BaseCommand.Type
TOPIC = "persistent://public/default/t-partition-0"


class Broker:
    """One connection: what the client sent, and how SUBSCRIBE is answered."""

    def __init__(self, answer: str) -> None:
        self.answer = answer  # "success", "timeout", "error" or "never"
        self.sent: list[pb.BaseCommand] = []
        self.subscribed = asyncio.Event()
        self.release = asyncio.Event()
        self.is_closed = False
        self._ids = 0

    def new_request_id(self) -> int:
        self._ids += 1
        return self._ids

    def register_consumer(self, consumer_id: int, handler: Any) -> None:
        pass

    def unregister_consumer(self, consumer_id: int, handler: Any) -> None:
        pass

    def send(self, command: pb.BaseCommand) -> None:
        self.sent.append(command)

    async def request(self, command: pb.BaseCommand, request_id: int) -> pb.BaseCommand:
        self.sent.append(command)
        self.subscribed.set()
        if self.answer == "timeout":
            raise OperationTimeoutError("SUBSCRIBE: no answer in 10s")
        if self.answer == "error":
            raise PulsarWireError("ConsumerBusy", True, pb.ConsumerBusy)
        if self.answer == "never":
            await asyncio.Event().wait()
        await self.release.wait()
        return pb.BaseCommand(type=T.SUCCESS, success=pb.CommandSuccess(request_id=request_id))

    def closes(self) -> list[int]:
        return [c.close_consumer.consumer_id for c in self.sent if c.type == T.CLOSE_CONSUMER]


class Session:
    operation_timeout_s = 10.0

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def new_id(self) -> int:
        return 7

    async def connect_topic(self, topic: str) -> Broker:
        return self.broker


class Reader:
    position: Position = EARLIEST

    def __init__(self) -> None:
        self.flows = 0

    def on_subscribed(self) -> None:
        self.flows += 1


def _subscription(broker: Broker, reader: Reader) -> ReaderSubscription:
    return ReaderSubscription(Session(broker), TOPIC, reader, compacted=False)  # type: ignore[arg-type]


@pytest.mark.parametrize("answer", ["timeout", "error"])
async def test_a_failed_subscribe_is_closed_on_the_broker(answer: str) -> None:
    broker = Broker(answer)
    with pytest.raises(PulsarWireError):
        await _subscription(broker, Reader()).attach()
    assert broker.closes() == [7]


async def test_a_subscribe_cancelled_while_waiting_is_closed_on_the_broker() -> None:
    broker = Broker("never")
    attach = asyncio.create_task(_subscription(broker, Reader()).attach())
    await broker.subscribed.wait()
    attach.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attach
    assert broker.closes() == [7]


async def test_a_reader_closed_while_subscribing_is_closed_on_the_broker() -> None:
    broker, reader = Broker("success"), Reader()
    sub = _subscription(broker, reader)
    attach = asyncio.create_task(sub.attach())
    await broker.subscribed.wait()
    await sub.close()  # nothing to close yet, as far as the client knows
    broker.release.set()  # and then the broker says it subscribed
    await attach
    assert broker.closes() == [7]
    assert reader.flows == 0  # no permits for a reader nobody reads


async def test_a_subscribe_that_succeeds_is_not_closed() -> None:
    broker, reader = Broker("success"), Reader()
    broker.release.set()
    await _subscription(broker, reader).attach()
    assert broker.closes() == []
    assert reader.flows == 1
