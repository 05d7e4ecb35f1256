"""kop's Pulsar producer in Pulsar's access modes, against the scripted broker
(tests/sim/wire_access.py holds what the broker decides): a fencing producer takes
the topic for good, an unload keeps the fence, a name continues its sequence ids,
a held topic refuses at once. Each a deterministic scenario on the simulated clock."""

from __future__ import annotations

import asyncio

import pytest

from kop.pulsar.client import PulsarWriter, SendBudget
from kop.pulsar.wire.errors import ProducerBusyError, ProducerFencedError
from kop.pulsar.wire.producer import Receipt, WireProducer
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.storage.types import OutgoingEntry, OutgoingMessage, WriterFenced
from tests.sim.clock import SimLoop
from tests.sim.test_wire_producer import TOPIC, all_done, until
from tests.sim.wire_broker import LEDGER, SimBroker

T = pb.BaseCommand.Type


async def open_producer(
    broker: SimBroker,
    mode: pb.ProducerAccessMode = pb.ExclusiveWithFencing,
    *,
    client: int = 0,
    name: str | None = None,
) -> WireProducer:
    producer = WireProducer(
        broker.session(client), TOPIC, send_timeout_s=300.0, access_mode=mode, name=name
    )
    await producer.start()
    return producer


def send(producer: WireProducer, payload: bytes) -> asyncio.Future[Receipt]:
    return producer.send(pb.MessageMetadata(), payload)


def producer_commands(broker: SimBroker, client: int) -> list[pb.CommandProducer]:
    return [
        c.producer for conn in broker.connections if conn.client == client
        for c in conn.commands(T.PRODUCER)
    ]  # fmt: skip


def test_a_fencing_producer_takes_the_topic_for_good(loop: SimLoop) -> None:
    """F1, F2: what the broker had pushed for the old holder is stored and
    acknowledged before the new holder's first entry; everything else of the old
    holder fails ProducerFenced, now and later; it tries to attach once more (it
    cannot tell a fence from an unload) and never again. Its one try closes the new
    holder's producer, which comes back with its epoch."""
    broker = SimBroker(persist_delay=None)

    async def scenario() -> None:
        old = await open_producer(broker)
        assert old.hold.epoch == 0
        pushed = [send(old, b"a0"), send(old, b"a1")]
        await until(lambda: broker.pending_writes == 2, 1, "two writes pushed")
        new = await open_producer(broker, client=1)
        assert new.hold.epoch == 1
        late = send(old, b"a2")  # after the fence: refused
        first = send(new, b"b0")
        broker.persist_delay = 0.001
        broker.persist(2)
        await all_done([*pushed, late, first], 30)
        assert [f.result() for f in pushed] == [(LEDGER, 0), (LEDGER, 1)]
        assert isinstance(late.exception(), ProducerFencedError)
        assert old.fenced
        assert first.result() == (LEDGER, 2)
        later = send(old, b"a3")
        assert isinstance(later.exception(), ProducerFencedError)
        attempts = producer_commands(broker, 0)
        assert [c.topic_epoch for c in attempts[1:]] == [0]  # one try, with its epoch
        await asyncio.sleep(5)
        assert len(producer_commands(broker, 0)) == 2  # and never again
        again = send(new, b"b1")
        await all_done([again], 30)
        assert again.result() == (LEDGER, 3) and new.hold.epoch == 1
        assert [s.payload for s in broker.log] == [b"a0", b"a1", b"b0", b"b1"]

    loop.run(scenario(), within=60)


def test_an_unload_keeps_the_fence(loop: SimLoop) -> None:
    """F4: the holder comes back after an unload with the epoch it holds, so the
    epoch stays; a producer fenced before the unload stays out."""
    broker = SimBroker()

    async def scenario() -> None:
        stale = await open_producer(broker, client=1)
        holder = await open_producer(broker)
        broker.unload()
        sent = [send(holder, b"x"), send(stale, b"y")]
        await all_done(sent, 30)
        assert sent[0].exception() is None and holder.hold.epoch == 1
        assert isinstance(sent[1].exception(), ProducerFencedError)
        assert [c.topic_epoch for c in producer_commands(broker, 0)[1:]] == [1]
        assert broker.access.history == [("sim-0", 0), ("sim-1", 1), ("sim-1", 1)]
        assert [s.payload for s in broker.log] == [b"x"]

    loop.run(scenario(), within=60)


def test_a_holder_closed_without_a_word_after_an_unload_is_not_ignored(loop: SimLoop) -> None:
    """After an unload the broker ignores, for 30 s, every SEND for the producer id it
    closed on that connection, even once that id is attached again. A fenced
    producer's one try closes the holder without a word: with the same id again, the
    holder's next entries would vanish until the send timeout. A new producer id for
    every attach makes the broker close the connection instead, and the holder comes
    back at once."""
    broker = SimBroker()

    async def scenario() -> None:
        stale = await open_producer(broker, client=1)
        holder = await open_producer(broker)
        broker.unload()
        await all_done([send(holder, b"after the unload")], 30)
        await all_done([send(stale, b"stale")], 30)  # its try closes the holder
        started = asyncio.get_running_loop().time()
        sent = send(holder, b"x")
        await all_done([sent], 30)
        assert sent.exception() is None
        assert asyncio.get_running_loop().time() - started < 1
        ids = [c.producer_id for c in producer_commands(broker, 0)]
        assert len(set(ids)) == len(ids) == 3

    loop.run(scenario(), within=60)


def test_a_name_continues_its_sequence_ids(loop: SimLoop) -> None:
    """A producer given a name starts after the highest sequence id its name has
    pushed (Java: msgIdGenerator = lastSequenceId + 1), so deduplication carries over
    from a previous holder of the name; one without a name starts at 0."""
    broker = SimBroker()

    async def scenario() -> None:
        first = await open_producer(broker, name="kop-p0")
        assert first.hold.resumed_after == -1
        await all_done([send(first, b"a%d" % i) for i in range(3)], 30)
        await first.close()
        second = await open_producer(broker, client=1, name="kop-p0")
        assert (second.hold.resumed_after, second.next_sequence_id) == (2, 3)
        await all_done([send(second, b"b0")], 30)
        assert broker.stored("kop-p0") == [0, 1, 2, 3]
        assert all(c.user_provided_producer_name for c in producer_commands(broker, 1))
        unnamed = await open_producer(broker, client=2)
        assert (unnamed.hold.resumed_after, unnamed.next_sequence_id) == (-1, 0)

    loop.run(scenario(), within=60)


@pytest.mark.parametrize("mode", [pb.Exclusive, pb.Shared])
def test_a_held_topic_refuses_at_once(loop: SimLoop, mode: pb.ProducerAccessMode) -> None:
    """While an exclusive producer holds the topic, Exclusive is refused
    ProducerFenced and Shared ProducerBusy: both final at creation (Java), not
    retried until the operation timeout."""
    broker = SimBroker()

    async def scenario() -> None:
        await open_producer(broker, pb.Exclusive)
        started = asyncio.get_running_loop().time()
        with pytest.raises(ProducerBusyError):
            await open_producer(broker, mode, client=1)
        assert asyncio.get_running_loop().time() - started < 0.1
        assert len(producer_commands(broker, 1)) == 1

    loop.run(scenario(), within=60)


def test_a_shared_producer_is_fenced_by_a_fencing_one(loop: SimLoop) -> None:
    """The broker drops the shared producer without a word; its next send costs its
    connection, and its way back is refused while the fencing one holds the topic:
    fenced, as the storage port's FENCING fences every other writer."""
    broker = SimBroker()

    async def scenario() -> None:
        shared = await open_producer(broker, pb.Shared)
        await open_producer(broker, client=1)
        sent = send(shared, b"x")
        await all_done([sent], 30)
        assert isinstance(sent.exception(), ProducerFencedError)
        assert broker.log == []

    loop.run(scenario(), within=60)


def test_an_exclusive_producer_waits_for_its_former_attachment(loop: SimLoop) -> None:
    """After a cut the broker has not noticed yet, the exclusive producer's way back
    is refused "existing exclusive producer: <its own name>": its own former
    attachment, not a rival. It tries again until the broker lets that one go
    (Java would take the refusal as fenced, for good)."""
    broker = SimBroker(notice_delay=3.0)

    async def scenario() -> None:
        holder = await open_producer(broker, pb.Exclusive)
        broker.cut()
        sent = send(holder, b"x")
        await all_done([sent], 60)
        assert sent.exception() is None and not holder.fenced
        assert holder.hold.epoch == 0 and broker.access.epoch == 0
        assert len(producer_commands(broker, 0)) > 2  # refused at least once

    loop.run(scenario(), within=90)


def test_a_fencing_producer_gets_past_a_name_still_held(loop: SimLoop) -> None:
    """The same name taken over while the old holder's writes are pending: the
    broker fences the old one but refuses the name until its writes are done
    (ProducerBusy, after moving the epoch); the newcomer tries again and gets in,
    one epoch further. (On Pulsar 4.0.7 that second try can deadlock the broker:
    docs/decisions.md D14.)"""
    broker = SimBroker(persist_delay=None)

    async def scenario() -> None:
        old = await open_producer(broker, name="kop-p0")
        pending = send(old, b"a0")
        await until(lambda: broker.pending_writes == 1, 1, "a write pushed")
        opening = asyncio.ensure_future(open_producer(broker, client=1, name="kop-p0"))
        await until(lambda: broker.access.fences == 2, 1, "the first try")
        broker.persist_delay = 0.001
        broker.persist(1)
        new = await opening
        assert (new.hold.epoch, new.hold.resumed_after) == (2, 0)
        await all_done([pending], 30)
        assert pending.result() == (LEDGER, 0)

    loop.run(scenario(), within=60)


def test_a_fenced_producer_is_a_fenced_writer(loop: SimLoop) -> None:
    """The storage port's face of it: epoch and resumed_after as the broker gave
    them, and every write of a fenced writer fails WriterFenced, not retriable."""
    broker = SimBroker()

    async def scenario() -> None:
        writer = PulsarWriter(await open_producer(broker, name="kop-p0"), SendBudget(1 << 20))
        other = PulsarWriter(await open_producer(broker, client=1), SendBudget(1 << 20))
        assert (writer.epoch, writer.resumed_after, other.epoch, other.resumed_after) == (
            0, -1, 1, -1,
        )  # fmt: skip
        entry = OutgoingEntry.of(OutgoingMessage(b"v", {}, None, None))
        _, done = writer.send_all([entry])
        with pytest.raises(WriterFenced) as fenced:
            await asyncio.wait_for(done, 30)
        assert not fenced.value.retriable
        _, later = writer.send_all([entry])
        with pytest.raises(WriterFenced):
            await later

    loop.run(scenario(), within=60)


def test_a_producer_that_fences_then_shares_keeps_pulsar_producers_and_the_fence(
    loop: SimLoop,
) -> None:
    """D21: kop takes a partition with ExclusiveWithFencing, closes that producer and
    writes Shared at the epoch its fence made, so a Pulsar application's producer
    writes beside it. Another instance doing the same fences it: the old holder comes
    back Shared (the broker lets it), finds the topic at a newer epoch and never sends
    again; the application's producer comes back and goes on."""
    broker = SimBroker(persist_delay=0.001)

    async def fence_then_share(client: int) -> WireProducer:
        producer = WireProducer(
            broker.session(client), TOPIC, send_timeout_s=300.0,
            access_mode=pb.ExclusiveWithFencing, fence_first=True,
        )  # fmt: skip
        await producer.start()
        return producer

    async def scenario() -> None:
        old = await fence_then_share(0)
        assert (old.hold.mode, old.hold.epoch) == (pb.Shared, 0)
        app = await open_producer(broker, pb.Shared, client=2)
        await all_done([send(old, b"a0"), send(app, b"p0")], 30)
        new = await fence_then_share(1)
        assert (new.hold.mode, new.hold.epoch) == (pb.Shared, 1)
        late = send(old, b"a-late")
        await all_done([late], 30)
        assert isinstance(late.exception(), ProducerFencedError) and old.fenced
        assert "epoch is 1, not 0" in str(late.exception())
        after = [send(new, b"b0"), send(app, b"p1")]
        await all_done(after, 30)
        assert all(f.exception() is None for f in after)
        await asyncio.sleep(5)
        assert isinstance(send(old, b"a-later").exception(), ProducerFencedError)
        old_attempts = producer_commands(broker, 0)
        modes = [(c.producer_access_mode, c.HasField("topic_epoch")) for c in old_attempts]
        # the fence, the shared attach, the one try that found the epoch moved
        assert modes == [(pb.ExclusiveWithFencing, False), (pb.Shared, False), (pb.Shared, False)]
        assert sorted(s.payload for s in broker.log) == [b"a0", b"b0", b"p0", b"p1"]

    loop.run(scenario(), within=60)
