"""What the producer machine checks once another writer fenced the topic (F1, F2 of
docs/design/several-instances.md): the fenced producer has nothing acknowledged that
the broker had not pushed when the fencer arrived, all of it lies before the
fencer's first entry, and it never attaches again; the fencer's entries are all
stored, once, in order. Entries carry who sent them: b"entry-<i>" the fenced
producer's i-th send, b"rival-<i>" the fencer's."""

from __future__ import annotations

import asyncio
import contextlib

from kop.pulsar.wire.errors import OperationTimeoutError, ProducerFencedError
from kop.pulsar.wire.producer import Receipt, WireProducer
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from tests.sim.wire_broker import LEDGER, SimBroker

RIVAL = 1  # the fencer's client; the fenced producer's is 0


class FenceWatch:
    def __init__(self, broker: SimBroker, topic: str) -> None:
        self.broker = broker
        self.rival: WireProducer | None = None
        self.sent: list[asyncio.Future[Receipt]] = []
        self._topic = topic
        self._opening: asyncio.Task[None] | None = None
        self._attempts: int | None = None  # the fenced one's PRODUCERs once it knew

    @property
    def fenced(self) -> bool:
        return self._opening is not None

    def fence(self, producer: WireProducer, same_name: bool, then_share: bool = False) -> None:
        """Another writer attaches in ExclusiveWithFencing, in the background (under a
        name still held it tries again until the old holder's writes are done).
        It takes the old one's name only from a holder of an epoch: a shared producer
        can come back whenever the fencer's connection drops, and two writers
        interleaving under one name defeat deduplication (the second's entry is
        taken for a duplicate of the first's under the same sequence id)."""
        same_name = same_name and producer.hold.epoch >= 0 and not then_share
        name = producer.name if same_name else "rival"
        self._opening = asyncio.ensure_future(self._open(name, then_share))

    async def _open(self, name: str, then_share: bool) -> None:
        while True:
            rival = WireProducer(
                self.broker.session(RIVAL), self._topic, send_timeout_s=1e6,
                access_mode=pb.ExclusiveWithFencing, name=name, fence_first=then_share,
            )  # fmt: skip
            with contextlib.suppress(OperationTimeoutError):
                await rival.start()
                self.rival = rival
                return

    def send(self) -> None:
        if self.rival is not None:
            i = len(self.sent)
            self.sent.append(self.rival.send(pb.MessageMetadata(), b"rival-%d" % i))

    def check(self, producer: WireProducer, sent: list[asyncio.Future[Receipt]]) -> None:
        """The order holds for a producer that holds an epoch. A shared one has none
        to be refused by: when the fencer's connection drops, Pulsar lets it back
        until the fencer returns (its writes may then follow the fencer's), so for
        it only this holds: once refused, it never tries again."""
        arrivals = [f for f in self.broker.fencings if f[0] == RIVAL]
        if not arrivals:
            return
        self._check_attempts(producer)
        if producer.hold.epoch < 0:
            return
        _, pushed, admitted = arrivals[0]
        last = pushed.get(producer.name, -1)  # the highest it can ever have stored
        log = self.broker.log
        theirs = [i for i, s in enumerate(log) if s.payload[:5] == b"rival"]
        first = theirs[0] if theirs else len(log)
        mine = {int(s.payload[6:]): i for i, s in enumerate(log) if s.payload[:5] == b"entry"}
        assert all(i < first for i in mine.values()), f"stored after the fencer's first: {mine}"
        assert all(seq <= last for seq in mine), f"pushed after the fence: {mine}, {last}"
        for seq, future in enumerate(sent):
            if future.done() and future.exception() is None:
                assert seq in mine, f"entry {seq} acknowledged, not stored"
        again = self.broker.admitted[admitted:].count(0)
        # one that fenced then shared is let in once more (a Shared attach), sees the
        # epoch moved and leaves: the checks above hold that it sent nothing after
        assert again <= (1 if producer.hold.mode == pb.Shared else 0), "it attached again"

    def _check_attempts(self, producer: WireProducer) -> None:
        attempts = sum(
            len(c.commands(pb.BaseCommand.Type.PRODUCER))
            for c in self.broker.connections if c.client == 0
        )  # fmt: skip
        if producer.fenced and self._attempts is None:
            self._attempts = attempts
        assert self._attempts is None or attempts == self._attempts, "it tried again"

    def check_healed(self, sent: list[asyncio.Future[Receipt]]) -> None:
        """Every send of the fenced one was acknowledged or failed ProducerFenced;
        every send of the fencer is stored, once, in order, where its receipt says."""
        for future in sent:
            error = future.exception()
            assert error is None or isinstance(error, ProducerFencedError), repr(error)
        where = {s.payload: i for i, s in enumerate(self.broker.log)}
        theirs = [s.payload for s in self.broker.log if s.payload[:5] == b"rival"]
        assert theirs == [b"rival-%d" % i for i in range(len(self.sent))]
        for i, future in enumerate(self.sent):
            assert future.result() in ((-1, -1), (LEDGER, where[b"rival-%d" % i]))
