"""kop's Pulsar reader (kop/pulsar/wire) subscribing against the scripted broker:
a subscribe that times out leaves no consumer on the broker, and creating a reader
fails within the operation timeout however its attempts go."""

from __future__ import annotations

import asyncio

import pytest

from kop.pulsar.wire.errors import OperationTimeoutError
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.reader import WireReader
from tests.sim.clock import SimLoop
from tests.sim.wire_broker import SimBroker

T = pb.BaseCommand.Type
TOPIC = "persistent://public/default/t-partition-0"


async def _start_reader(broker: SimBroker) -> float:
    """How long (simulated) `start()` took to fail with an operation timeout."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    reader = WireReader(broker.session(), TOPIC, None)
    with pytest.raises(OperationTimeoutError):
        await reader.start()
    return loop.time() - started


def test_a_subscribe_that_times_out_leaves_no_consumer_on_the_broker(loop: SimLoop) -> None:
    """The broker made the consumer but its answer never came: the client closes it
    (as the Java client does), or it would stay for as long as the connection."""
    broker = SimBroker(answer_subscribe=False)

    async def scenario() -> None:
        took = await _start_reader(broker)
        assert took == pytest.approx(broker.operation_timeout_s, abs=0.01)
        await asyncio.sleep(0.01)
        assert broker.consumers == set()
        conn = broker.connection()
        assert len(conn.commands(T.CLOSE_CONSUMER)) == len(conn.commands(T.SUBSCRIBE)) == 1

    loop.run(scenario(), within=60)


def test_creating_a_reader_fails_within_the_operation_timeout(loop: SimLoop) -> None:
    """Retriable errors for the first ~6 s, then a SUBSCRIBE that is never answered:
    the last attempt is cut at the deadline, not given a whole timeout of its own."""
    broker = SimBroker(answer_subscribe=False, subscribe_errors=7)

    async def scenario() -> None:
        took = await _start_reader(broker)
        assert took <= broker.operation_timeout_s + 0.01
        await asyncio.sleep(0.01)
        assert broker.consumers == set()  # the cut attempt closed its consumer too

    loop.run(scenario(), within=60)
