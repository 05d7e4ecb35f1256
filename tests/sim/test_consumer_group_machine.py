"""The KIP-848 consumer group coordinator (kop/groups/consumer/) driven by hypothesis:
consumers that join, heartbeat, lose answers, leave (for good or, when static, for a
while), stop heartbeating until their session expires, and come back; classic (eager)
consumers inside the group as after Kafka's online upgrade, joining, syncing and
rejoining when their heartbeat says so; topics that grow; and kop killed between any
two steps, restarted from nothing but the records it persisted (decoded as a restarted
kop reads them).

Checked after every step: no partition is held by two members (assigned or still being
revoked); a consumer never holds a partition the coordinator does not count as its.
After `settle` (every consumer heartbeats until nothing moves): the group is Stable and
every partition of the subscribed topics is owned by exactly one member.
"""

from __future__ import annotations

import os
import struct
import uuid
from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from kop.groups.consumer import classic_members
from kop.groups.consumer.coordinator import ConsumerCoordinator, ConsumerSettings
from kop.groups.consumer.group import ConsumerGroupState, TopicMeta
from kop.groups.consumer.records import LoadedConsumerGroups, changes
from kop.groups.consumer.requests import Heartbeat, Resolved
from kop.groups.consumer_protocol import assigned_partitions
from kop.groups.coordinator import JoinRequest
from kop.groups.offsets_codec import decode
from kop.protocol.errors import ErrorCode, KafkaError

EXAMPLES = int(os.environ.get("KOP_SIM_EXAMPLES", "60"))
STEPS = int(os.environ.get("KOP_SIM_STEPS", "40"))
SESSION_MS = 10_000
IDS = {"t1": uuid.UUID(int=1), "t2": uuid.UUID(int=2), "t3": uuid.UUID(int=3)}
REGEX = "t.*"  # matches every topic, also t3 once it is created
NAMES = [f"c{i}" for i in range(5)]


@dataclass
class Consumer:
    member_id: str
    instance_id: str | None
    topics: tuple[str, ...]  # () with `regex`
    assignor: str | None
    regex: str | None = None
    epoch: int = 0
    owned: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    full: bool = False  # after an answer that never came, a client restates everything
    classic: bool = False  # speaks the classic protocol (eager), inside the KIP-848 group


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.settings = ConsumerSettings(session_timeout_ms=SESSION_MS)
        self.c = ConsumerCoordinator(self.settings)
        self.persisted: dict[str, bytes | None] = {}  # the offsets topic, compacted
        self.now = 0
        self.partitions = {"t1": 3, "t2": 2}
        self.consumers: dict[str, Consumer] = {}
        self.generation = 0  # fresh member ids for consumers that restart
        self.instances: dict[str, tuple[tuple[str, ...], str | None]] = {}

    def resolved(self) -> Resolved:
        topics = {n: TopicMeta(IDS[n], n, p) for n, p in self.partitions.items()}
        return Resolved(topics, {REGEX: tuple(sorted(self.partitions))})

    def apply(self, group_copy: object, old: object) -> None:
        for m in changes(old, group_copy):  # type: ignore[arg-type]
            assert m.partition_key is not None
            self.persisted[m.partition_key] = m.payload

    # -- consumers ---------------------------------------------------------------------

    @rule(
        name=st.sampled_from(NAMES),
        static=st.booleans(),
        topics=st.sampled_from([("t1",), ("t1", "t2"), ("t2",), ()]),  # (): by regex
        assignor=st.sampled_from([None, "uniform", "range"]),
    )
    def start(self, name: str, static: bool, topics: tuple[str, ...], assignor: str | None) -> None:
        if name in self.consumers:
            return
        if static:  # an instance restarts with the subscription it had
            topics, assignor = self.instances.setdefault(name, (topics, assignor))
        self.generation += 1
        self.consumers[name] = Consumer(
            f"{name}-{self.generation}", f"i-{name}" if static else None, topics, assignor,
            None if topics else REGEX,
        )  # fmt: skip
        self.heartbeat(name, False)

    @rule(name=st.sampled_from(NAMES), topics=st.sampled_from([("t1",), ("t1", "t2")]))
    def start_classic(self, name: str, topics: tuple[str, ...]) -> None:
        """A consumer of the classic protocol joins the group (once it exists)."""
        g = self.c.groups.get("g")
        if name in self.consumers or g is None or not g.members:
            return
        self.generation += 1
        self.consumers[name] = Consumer(
            f"{name}-{self.generation}", None, topics, None, classic=True
        )
        self.heartbeat(name, False)

    def classic_beat(self, cons: Consumer) -> None:
        """A classic consumer's heartbeat; told to rejoin (or not in yet), it gives up
        everything (eager), joins and syncs."""
        g = self.c.groups.get("g")
        if g is None or not g.members:
            cons.epoch, cons.owned = 0, {}
            return
        if cons.epoch != 0:
            try:
                if not classic_members.must_rejoin(g, cons.member_id, None, cons.epoch):
                    self.c.timers.touched("g", g.members[cons.member_id], self.now)
                    return
            except KafkaError as exc:
                assert exc.code in (ErrorCode.unknown_member_id, ErrorCode.illegal_generation)
        cons.epoch, cons.owned = 0, {}
        subscription = struct.pack(">hi", 0, len(cons.topics))
        for t in cons.topics:
            subscription += struct.pack(">h", len(t)) + t.encode()
        subscription += struct.pack(">i", -1)
        join = JoinRequest("g", cons.member_id, None, "consumer", (("range", subscription),),
                           SESSION_MS, 30_000, "c", "/h", True)  # fmt: skip
        copy = g.copy()
        joined = classic_members.join(copy, join, cons.member_id, self.resolved(), self.c.rules)
        self.apply(copy, g)
        self.c.install(copy, self.now, cons.member_id)
        try:
            synced = classic_members.sync(copy, cons.member_id, None, joined.result.generation,
                                          ("consumer", "range"))  # fmt: skip
        except KafkaError as exc:
            assert exc.code is ErrorCode.rebalance_in_progress
            return
        cons.epoch = joined.result.generation
        names = assigned_partitions(synced.assignment) or {}
        cons.owned = {IDS[t]: frozenset(ps) for t, ps in names.items() if ps}

    @rule(name=st.sampled_from(NAMES), lost=st.booleans())
    def heartbeat(self, name: str, lost: bool) -> None:
        """One heartbeat; `lost`: the coordinator acts on it but the answer never comes."""
        cons = self.consumers.get(name)
        if cons is None:
            return
        if cons.classic:
            self.classic_beat(cons)
            return
        if cons.epoch == 0:
            hb = Heartbeat("g", cons.member_id, 0, cons.instance_id, None, 30_000, cons.topics,
                           cons.regex, cons.assignor, {})  # fmt: skip
        elif cons.full:
            hb = Heartbeat("g", cons.member_id, cons.epoch, cons.instance_id, None, 30_000,
                           cons.topics, cons.regex, cons.assignor, cons.owned)  # fmt: skip
        else:
            hb = Heartbeat("g", cons.member_id, cons.epoch, cons.instance_id, owned=cons.owned)
        old = self.c.groups.get("g")
        cons.full = lost
        try:
            g, answer = self.c.heartbeat(hb, self.resolved(), self.now)
        except KafkaError as exc:
            if lost:
                return
            if exc.code is ErrorCode.unreleased_instance_id:
                return  # its old self is still in: try later
            assert exc.code in (
                ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id,
                ErrorCode.fenced_instance_id, ErrorCode.group_id_not_found,
            ), exc.code  # fmt: skip
            cons.epoch, cons.owned = 0, {}  # gives everything up and rejoins
            if exc.code is ErrorCode.fenced_instance_id:
                del self.consumers[name]
            return
        self.apply(g, old)
        self.c.install(g, self.now, answer.member_id)
        if lost:
            return
        cons.epoch = answer.member_epoch
        if answer.assignment is not None:
            cons.owned = {t: p for t, p in answer.assignment.items() if p}

    @rule(name=st.sampled_from(NAMES), for_a_while=st.booleans())
    def leave(self, name: str, for_a_while: bool) -> None:
        cons = self.consumers.pop(name, None)
        if cons is None or cons.epoch == 0:
            return
        if cons.classic:
            g = self.c.groups.get("g")
            if g is not None:
                copy = g.copy()
                classic_members.leave(copy, [(cons.member_id, None)])
                self.apply(copy, g)
                self.c.install(copy, self.now)
            return
        static_leave = for_a_while and cons.instance_id is not None
        hb = Heartbeat("g", cons.member_id, -2 if static_leave else -1, cons.instance_id)
        old = self.c.groups.get("g")
        try:
            g, _ = self.c.heartbeat(hb, None, self.now)
        except KafkaError:
            return
        self.apply(g, old)
        self.c.install(g, self.now)

    @rule(ms=st.sampled_from([1_000, 6_000, SESSION_MS + 1]))
    def time_passes(self, ms: int) -> None:
        """Consumers that stayed silent this long may have their sessions expire."""
        self.now += ms
        for due in self.c.due(self.now):
            old = self.c.groups.get(due.group_id)
            g = self.c.fenced(due)
            if g is not None:
                self.apply(g, old)
                self.c.install(g, self.now)

    @rule()
    def topic_grows(self) -> None:
        if self.partitions["t1"] < 6:
            self.partitions["t1"] += 1

    @rule()
    def topic_created(self) -> None:
        """A topic the regex matches appears (seen at the group's next lookup)."""
        self.partitions.setdefault("t3", 2)

    @rule()
    def kop_restarts(self) -> None:
        """A new coordinator from the persisted records alone."""
        loaded = LoadedConsumerGroups()
        for key, payload in self.persisted.items():
            loaded.apply(decode(key, payload))  # type: ignore[arg-type]
        self.c = ConsumerCoordinator(self.settings)
        for g in loaded.groups():
            self.c.restore(g, self.now)

    @rule()
    def settle(self) -> None:
        """Every consumer heartbeats until nothing moves: the group must be Stable, with
        every subscribed partition owned once."""
        g = self.c.groups.get("g")
        if g is None or not self.consumers:
            return
        for _ in range(12):
            for name in list(self.consumers):
                self.heartbeat(name, False)
        g = self.c.groups["g"]
        live = {c.member_id for c in self.consumers.values()}
        if set(g.members) != live:
            event("settle: a member away or not yet expired holds its place")
            return
        event("settle: checked")
        assert g.state is ConsumerGroupState.STABLE, g.state
        subscribed = {t for c in self.consumers.values() for t in c.topics}
        if any(c.regex for c in self.consumers.values()):
            subscribed |= set(self.partitions)
        expected = {(IDS[t], p) for t in subscribed for p in range(self.partitions[t])}
        held = [(t, p) for m in g.members.values() for t, ps in m.assigned.items() for p in ps]
        assert sorted(held) == sorted(expected)

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def no_partition_held_twice(self) -> None:
        g = self.c.groups.get("g")
        if g is None:
            return
        seen: set[tuple[uuid.UUID, int]] = set()
        for m in g.members.values():
            for a in (m.assigned, m.revoking):
                for t, ps in a.items():
                    for p in ps:
                        assert (t, p) not in seen, (t, p)
                        seen.add((t, p))

    @invariant()
    def consumers_hold_only_what_the_coordinator_counts(self) -> None:
        g = self.c.groups.get("g")
        for cons in self.consumers.values():
            m = g.members.get(cons.member_id) if g is not None else None
            if m is None or cons.epoch == 0:
                continue
            for t, ps in cons.owned.items():
                assert ps <= m.assigned.get(t, frozenset()) | m.revoking.get(t, frozenset())


def test_consumer_group_machine() -> None:
    run_state_machine_as_test(
        ConsumerGroupMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
