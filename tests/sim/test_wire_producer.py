"""kop's own Pulsar producer (kop/pulsar/wire) under the faults a real broker shows
only by chance, each a deterministic scenario on the simulated clock against the
scripted broker of tests/sim/wire_broker.py: a receipt that never comes, a
producer the broker still holds, an entry pushed but not yet persisted when the
connection drops. What a user depends on: an entry reported stored is stored,
once, in send order; nothing is lost, nothing is written twice."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from kop.pulsar.client import PulsarWriter, SendBudget
from kop.pulsar.wire.errors import OperationTimeoutError, PulsarWireError
from kop.pulsar.wire.producer import Receipt, WireProducer
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.storage.types import OutgoingEntry, OutgoingMessage
from tests.sim.clock import SimLoop
from tests.sim.wire_broker import LEDGER, SimBroker

T = pb.BaseCommand.Type
TOPIC = "persistent://public/default/t-partition-0"


async def until(condition: Callable[[], bool], within: float, what: str) -> None:
    """Waits (in simulated time) until `condition()` holds; fails after `within` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        if loop.time() >= deadline:
            raise AssertionError(f"{what}: not within {within}s")
        await asyncio.sleep(0.001)


async def start_producer(broker: SimBroker, send_timeout_s: float = 300.0) -> WireProducer:
    producer = WireProducer(broker.session(), TOPIC, send_timeout_s=send_timeout_s)
    await producer.start()
    return producer


def send(producer: WireProducer, i: int) -> asyncio.Future[Receipt]:
    return producer.send(pb.MessageMetadata(), b"entry-%d" % i)


async def all_done(futures: list[asyncio.Future[Receipt]], within: float) -> None:
    await until(lambda: all(f.done() for f in futures), within, "every send answered")


def assert_stored_once_in_order(broker: SimBroker, producer: WireProducer, n: int) -> None:
    assert broker.errors == []
    assert broker.stored(producer.name) == list(range(n))
    assert [s.payload for s in broker.log] == [b"entry-%d" % i for i in range(n)]


def test_a_send_error_closes_the_connection_instead_of_recreating_the_producer_on_it(
    loop: SimLoop,
) -> None:
    """The broker still holds the producer (its close waits for two pending
    writes): re-creating it on that connection would be answered "already present"
    without `last_sequence_id`. Like the Java client, kop closes the connection and
    creates the producer on a new one, where deduplication decides."""
    broker = SimBroker(persist_delay=None)

    async def scenario() -> None:
        producer = await start_producer(broker)
        first = broker.connection()
        sent = [send(producer, 0), send(producer, 1)]
        await until(lambda: broker.pending_writes == 2, 1, "two writes pushed")
        broker.send_errors = 1
        sent.append(send(producer, 2))  # a transient error for this one
        await until(lambda: first.is_closed, 1, "the connection closed")
        broker.persist_delay = 0.001
        broker.persist(2)
        await all_done(sent, 30)
        assert [f.result() for f in sent] == [(-1, -1), (-1, -1), (LEDGER, 2)]
        assert_stored_once_in_order(broker, producer, 3)
        assert len(first.commands(T.PRODUCER)) == 1  # never re-created on it
        assert first.commands(T.CLOSE_PRODUCER) == []
        assert producer.is_connected

    loop.run(scenario(), within=60)


def test_an_entry_that_arrived_damaged_fails_alone_and_is_never_sent_again(
    loop: SimLoop,
) -> None:
    """A ChecksumError: the broker did not store the entry and pushed the next ones,
    so a re-send would be taken for a duplicate and reported stored. It fails (a
    new send of it may succeed) and the rest carries on, on the same connection."""
    broker = SimBroker()

    async def scenario() -> None:
        producer = await start_producer(broker)
        first = broker.connection()
        sent = [send(producer, 0)]
        await all_done(sent, 5)
        broker.send_errors, broker.send_error = 1, pb.ChecksumError
        sent += [send(producer, 1), send(producer, 2)]
        await all_done(sent, 30)
        error = sent[1].exception()
        assert isinstance(error, PulsarWireError) and error.retriable
        assert sent[2].result() == (LEDGER, 1)
        assert broker.stored(producer.name) == [0, 2]
        assert not first.is_closed and len(first.commands(T.SEND)) == 3

    loop.run(scenario(), within=60)


def test_a_terminated_topic_fails_every_pending_entry_for_good(loop: SimLoop) -> None:
    broker = SimBroker(persist_delay=None)

    async def scenario() -> None:
        producer = await start_producer(broker)
        first = broker.connection()
        sent = [send(producer, 0)]
        await until(lambda: broker.pending_writes == 1, 1, "a write pushed")
        broker.send_errors, broker.send_error = 1, pb.TopicTerminatedError
        sent.append(send(producer, 1))
        await all_done(sent, 30)
        for future in sent:
            error = future.exception()
            assert isinstance(error, PulsarWireError) and not error.retriable
        later = send(producer, 2).exception()
        assert isinstance(later, PulsarWireError) and not later.retriable
        assert not first.is_closed and len(first.commands(T.CLOSE_PRODUCER)) == 1

    loop.run(scenario(), within=60)


def test_an_entry_pushed_but_not_persisted_is_not_reported_stored(loop: SimLoop) -> None:
    """`last_sequence_id` is the highest sequence id the broker pushed to its log,
    not the highest stored: an entry pushed when the connection dropped and then
    lost with its write must be sent again, not reported stored."""
    broker = SimBroker(persist_delay=None)

    async def scenario() -> None:
        producer = await start_producer(broker)
        sent = [send(producer, i) for i in range(3)]
        await until(lambda: broker.pending_writes == 3, 1, "three writes pushed")
        broker.persist(1)
        await until(sent[0].done, 1, "the first receipt")
        broker.cut()
        await until(lambda: len(broker.connections) >= 2, 5, "a new connection")
        second = broker.connections[1]

        def recreated() -> bool:
            return bool(second.commands(T.PRODUCER)) and (producer.is_connected or second.is_closed)

        await until(recreated, 5, "the producer re-created")
        await asyncio.sleep(0.5)  # the broker still has entries 1 and 2 pushed only
        assert not sent[1].done() and not sent[2].done()
        broker.fail_writes()  # and they are lost with their write
        broker.persist_delay = 0.001
        await all_done(sent, 30)
        assert all(f.exception() is None for f in sent)
        assert_stored_once_in_order(broker, producer, 3)

    loop.run(scenario(), within=60)


def test_a_lost_receipt_is_settled_by_deduplication(loop: SimLoop) -> None:
    """A receipt never comes, the next one does: the receipts no longer match what
    was sent, so the connection is closed (as the Java client does) and both
    entries go again; the broker says both are duplicates (-1:-1)."""
    broker = SimBroker()

    async def scenario() -> None:
        producer = await start_producer(broker)
        first = broker.connection()
        broker.drop_receipts = 1
        sent = [send(producer, 0), send(producer, 1)]
        await all_done(sent, 30)
        assert [f.result() for f in sent] == [(-1, -1), (-1, -1)]
        assert_stored_once_in_order(broker, producer, 2)
        assert first.is_closed and first.commands(T.CLOSE_PRODUCER) == []
        assert len(first.commands(T.PRODUCER)) == 1

    loop.run(scenario(), within=60)


def test_receipts_that_never_come_fail_the_entries_at_the_send_timeout(loop: SimLoop) -> None:
    """Nothing reported stored that is not, and the caller hears at the timeout."""
    broker = SimBroker(persist_delay=None)

    async def scenario() -> None:
        producer = await start_producer(broker, send_timeout_s=30)
        started = asyncio.get_running_loop().time()
        sent = [send(producer, i) for i in range(3)]
        await all_done(sent, 60)
        assert asyncio.get_running_loop().time() - started == pytest.approx(30, abs=0.01)
        assert all(isinstance(f.exception(), OperationTimeoutError) for f in sent)
        assert broker.log == [] and broker.errors == []

    loop.run(scenario(), within=120)


def test_a_duplicate_receipt_leaves_the_place_to_the_log(loop: SimLoop) -> None:
    """A re-sent entry the broker had stored comes back as -1:-1. kop's writer must
    not take that as a place (it would count an offset at ledger -1): it reports
    the entry stored with its place unknown, and the tail follower learns the
    place by reading the log (tests/sim/test_receipts.py covers that part)."""
    broker = SimBroker()

    async def scenario() -> None:
        producer = await start_producer(broker)
        writer = PulsarWriter(producer, SendBudget(1 << 20))
        broker.drop_receipts = 1
        entries = [OutgoingEntry.of(OutgoingMessage(b"v%d" % i, {}, None, None)) for i in (0, 1)]
        _, acked = writer.send_all(entries)
        await until(acked.done, 30, "the write acknowledged")
        assert acked.result() == [None, None]
        _, acked = writer.send_all(entries[:1])
        await until(acked.done, 30, "the next write acknowledged")
        stored = acked.result()[0]
        assert stored is not None and (stored.position.ledger, stored.position.entry) == (
            LEDGER,
            2,
        )

    loop.run(scenario(), within=60)
