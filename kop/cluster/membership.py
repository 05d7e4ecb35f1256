"""Which kop instances are alive, learnt from heartbeats on one Pulsar topic.

Every instance writes a beat every `interval_s` and tails the topic; a member is
alive while its last beat is younger than `ttl_s` on the reader's own monotonic
clock, so instances need no agreement on time. Joining needs no wait: the joiner
writes a first beat and reads the topic up to it; the publish times there (one
broker's clock) say how old every other member's last beat already is. A member
that says it is leaving is gone at once. Silence counts only while this instance's
own beats come back (kop.cluster.lease): a dead members topic freezes the view
instead of emptying it. The view is only ever a hint for who should try to own
what: Pulsar's fences decide (see the package docstring).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import replace

from kop.cluster.beats import BeatDecoder, BeatSeal, Rivals, first_look, read_to_own_beat
from kop.cluster.lease import Lease, Resume
from kop.cluster.member import Member, State
from kop.storage.port import MessageLog, TopicReader, TopicWriter
from kop.storage.types import (
    OutgoingEntry,
    OutgoingMessage,
    StorageError,
)

log = logging.getLogger(__name__)


class Membership:
    def __init__(
        self,
        storage: MessageLog,
        topic: str,
        me: Member,
        *,
        interval_s: float = 1.0,
        ttl_s: float = 4.0,
        seal: BeatSeal | None = None,
    ) -> None:
        self._storage = storage
        self.topic = topic
        self.me = me
        self._interval_s = interval_s
        self._ttl_s = ttl_s
        self._heard: dict[int, tuple[Member, float]] = {}  # node -> (last beat, deadline)
        self.version = 0
        self._bumped = asyncio.Event()
        self._writer: TopicWriter | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._seal = seal  # signs this instance's beats, checks the others'
        # the beats read: malformed ones, and unproven ones (not signed with this cluster
        # secret: forged, or an instance configured with another secret), by node id
        self.beats = BeatDecoder(topic, seal)
        self.strangers: list[int] = []  # nodes beating unsigned when this one joined
        self.joining: list[int] = []  # nodes that were starting when this one joined
        self._rivals = Rivals()  # other instances seen with this node id
        self._lease = Lease(interval_s, ttl_s, 0.0)

    # -- the view ------------------------------------------------------------------

    def live(self) -> list[Member]:
        """The members alive now, by node id."""
        return sorted((m for m, _ in self._heard.values()), key=lambda m: m.node_id)

    async def changed(self, version: int) -> int:
        """Returns the view's version once it differs from `version`."""
        while self.version == version:
            await self._bumped.wait()
        return self.version

    def _bump(self) -> None:
        self.version += 1
        self._bumped.set()
        self._bumped = asyncio.Event()

    # -- lifecycle -----------------------------------------------------------------

    async def join(self) -> None:
        """Beat once (a `joining` beat, which nobody counts as alive), learn who else
        is alive, then keep beating and listening."""
        self._writer = await self._storage.writer(self.topic)
        await self._beat(replace(self.me, state=State.JOINING))
        reader = await self._storage.reader(self.topic, None, compacted=True)
        try:
            seen, joined_ms = await read_to_own_beat(reader, self.me, self.beats)
        except BaseException:
            await reader.close()
            raise
        now = asyncio.get_running_loop().time()
        look = first_look(seen, self.beats.unproven, joined_ms, self._ttl_s)
        self.strangers, self.joining = look.strangers, look.joining
        for member, age in look.live:
            self._heard[member.node_id] = (member, now + self._ttl_s - age)
        self._heard[self.me.node_id] = (self.me, now + self._ttl_s)
        self._lease = Lease(self._interval_s, self._ttl_s, now)
        self._bump()
        await self._beat(self.me)  # now the others count it
        log.info("joined as node %d; live: %s", self.me.node_id, _names(self.live()))
        self._spawn(self._listen(reader), "membership-listen")
        self._spawn(self._beating(), "membership-beat")
        self._spawn(self._expiring(), "membership-expire")

    async def halt(self) -> None:
        """Stop beating and listening without a word (the others find out by the TTL)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def leave(self) -> None:
        """Tell the others this instance is gone, then stop."""
        await self.halt()
        self.me = replace(self.me, state=State.LEAVING)
        if self._writer is not None:
            try:
                async with asyncio.timeout(self._ttl_s):
                    await self._beat(self.me)
            except (StorageError, TimeoutError) as exc:
                log.warning("could not tell the others this instance leaves: %s", exc)
        self._heard.pop(self.me.node_id, None)
        self._bump()

    def _spawn(self, coro: Awaitable[None], name: str) -> None:
        self._tasks.append(asyncio.ensure_future(coro))
        self._tasks[-1].set_name(name)

    # -- beats ---------------------------------------------------------------------

    async def _beat(self, member: Member) -> None:
        assert self._writer is not None
        proof = "" if self._seal is None else self._seal.beat_proof(member.encode())
        message = OutgoingMessage(member.encode(proof), {}, member.key, None)
        await self._writer.send_all([OutgoingEntry.of(message)])[1]

    async def _beating(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                async with asyncio.timeout(self._ttl_s):
                    await self._beat(self.me)
            except (StorageError, TimeoutError) as exc:
                log.warning(
                    "heartbeat not written (%s): the others drop this instance if it lasts",
                    exc or type(exc).__name__,
                )

    async def _listen(self, reader: TopicReader) -> None:
        try:
            while True:
                for member, published in self.beats.decoded(await reader.read()):
                    self._heard_from(member, published)
        finally:
            await reader.close()

    def _heard_from(self, member: Member, published_ms: int) -> None:
        if member.instance == self.me.instance:
            self._heard_own(member)
            return
        if member.node_id == self.me.node_id:
            self._rivals.heard(member)
            return
        self._lease.heard_other(member.node_id, published_ms, member.state is State.JOINING)
        known = self._heard.get(member.node_id)
        if member.state is State.JOINING:
            return
        if member.state is State.LEAVING:
            if known is not None and known[0].instance == member.instance:
                del self._heard[member.node_id]
                self._bump()
            return
        deadline = asyncio.get_running_loop().time() + self._ttl_s
        self._heard[member.node_id] = (member, deadline)
        if known is None or known[0] != member:
            self._bump()

    def _heard_own(self, member: Member) -> None:
        """Its own beat back: the topic works. After a gap the others' deadlines start
        again from now (this one judged nobody meanwhile); after a lapse (they may have
        dropped it, kop.cluster.lease) it leaves its own view until its next beat, so
        that everything it holds is let go and taken afresh."""
        now = asyncio.get_running_loop().time()
        gap = now - self._lease.confirmed_at
        resume = self._lease.confirmed(now)
        if resume is not Resume.IN_TIME:
            for node, (other, deadline) in self._heard.items():
                self._heard[node] = (other, max(deadline, now + self._ttl_s))
        if resume is Resume.LAPSED:
            log.warning(
                "own heartbeats were not heard for %.1f s while others beat: they may have "
                "taken over, so this instance lets go of everything and takes its share afresh",
                gap,
            )
            if self._heard.pop(member.node_id, None) is not None:
                self._bump()
            return
        if resume is Resume.FROZEN:
            log.info("own heartbeats heard again after %.1f s; nobody took over", gap)
        known = self._heard.get(member.node_id)
        self._heard[member.node_id] = (member, now + self._ttl_s)
        if known is None:
            self._bump()

    async def _expiring(self) -> None:
        """Drops the members silent past their deadline, but only while this instance
        hears its own beats; never itself (kop.cluster.lease)."""
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            gone = []
            if self._lease.healthy(now):
                gone = [n for n, (_, d) in self._heard.items() if d <= now and n != self.me.node_id]
            for node in gone:
                member = self._heard.pop(node)[0]
                log.info("node %d (%s:%d) went silent", node, member.host, member.port)
            if gone:
                self._bump()
            others = [d for n, (_, d) in self._heard.items() if n != self.me.node_id]
            soonest = max(min(others, default=now + self._ttl_s), now + self._interval_s / 4)
            await asyncio.sleep(soonest - now)


def _names(members: list[Member]) -> str:
    return ", ".join(f"{m.node_id}@{m.host}:{m.port}" for m in members) or "none"
