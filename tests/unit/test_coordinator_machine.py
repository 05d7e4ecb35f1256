"""The pure group coordinator driven by hypothesis: clients join (dynamic and
static, with changing protocols), sync, heartbeat, commit and leave; time jumps;
the group record's write succeeds or fails. After every step the invariants a
Kafka client depends on are checked against what the clients were told:

- one generation at a time: every successful join answer of a generation names
  the same leader and protocol, and generations only grow;
- every member of a completed generation gets the assignment its leader gave it;
- no commit from a stale generation is accepted;
- every parked request is answered exactly once, and a group whose members are
  all gone ends Empty;
- with time running on and nobody heartbeating, everything ends: all requests
  answered, the group Empty;
- the limits hold: a group never has more than group.max.size members (and member
  ids handed out), only a new member is refused for it, and no more than
  max_groups groups are held (standalone commits to other groups compete for them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from kop.groups.coordinator import PARKED, Coordinator, JoinRequest, Limits
from kop.groups.rebalance import Answer, JoinResult, Store, SyncResult
from kop.groups.timers import deadlines
from kop.groups.types import GroupState
from kop.protocol.errors import ErrorCode

GROUP = "g"
SESSION_MS = 10_000
REBALANCE_MS = 20_000
UNLIMITED = 2**31 - 1
PROTOCOLS = [(("range", b"r"),), (("range", b"r2"), ("roundrobin", b"x")), (("sticky", b"s"),)]


@dataclass
class Client:
    name: str
    instance_id: str | None
    member_id: str = ""
    generation: int = -1
    leader: bool = False
    skip: bool = False  # KIP-814: it leads, but must not run the assignor
    v9: bool = False  # its JoinGroup version supports skip_assignment
    members: tuple[tuple[str, str | None], ...] = ()  # (id, instance), if it led
    join_token: int | None = None
    sync_token: int | None = None
    assignment: bytes | None = None


@dataclass
class Told:
    """What the coordinator told clients about each generation."""

    leaders: dict[int, set[str]] = field(default_factory=dict)  # member ids named leader
    joined: dict[int, set[str]] = field(default_factory=dict)  # member ids told they are in
    protocols: dict[int, str | None] = field(default_factory=dict)
    # By the leader, per member identity: a static member's instance id (a static
    # member rejoining under a new member id keeps its place, KIP-345), else its id.
    assigned: dict[int, dict[str, bytes]] = field(default_factory=dict)


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.c = Coordinator(Limits(initial_rebalance_delay_ms=3_000))
        self.now = 1_000_000
        self.clients: list[Client] = []
        self.tokens = 0
        self.open: dict[int, tuple[str, Client]] = {}  # token -> (join|sync, client)
        self.told = Told()
        self.last_generation = 0
        self.store_ok = True
        self.instance_of: dict[str, str] = {}  # member id -> instance id, as handed out

    # -- plumbing -------------------------------------------------------------------

    def _token(self, kind: str, client: Client) -> int:
        self.tokens += 1
        self.open[self.tokens] = (kind, client)
        return self.tokens

    def _drain(self) -> None:
        while effects := self.c.take_effects():
            for e in effects:
                if isinstance(e, Store):
                    self.c.stored(e.metadata, self.store_ok, self.now)
                else:
                    self._deliver(e)

    def _deliver(self, a: Answer) -> None:
        assert isinstance(a.token, int) and a.token in self.open, "answered twice or unknown"
        kind, client = self.open.pop(a.token)
        if kind == "join":
            assert isinstance(a.result, JoinResult)
            client.join_token = None
            self._joined(client, a.result)
        else:
            assert isinstance(a.result, SyncResult)
            client.sync_token = None
            self._synced(client, a.result)

    def _joined(self, client: Client, r: JoinResult) -> None:
        if r.error is ErrorCode.member_id_required:
            client.member_id = r.member_id
            return
        if r.error is ErrorCode.none and client.instance_id is not None:
            self.instance_of[r.member_id] = client.instance_id
        if r.error in (ErrorCode.unknown_member_id, ErrorCode.fenced_instance_id):
            client.member_id, client.generation = "", -1
            return
        if r.error is not ErrorCode.none:
            return
        gen = r.generation
        assert gen >= self.last_generation, "a generation went backwards"
        self.last_generation = gen
        self.told.leaders.setdefault(gen, set()).add(r.leader)
        self.told.joined.setdefault(gen, set()).add(r.member_id)
        assert self.told.protocols.setdefault(gen, r.protocol) == r.protocol, "two protocols"
        client.member_id, client.generation = r.member_id, gen
        client.leader = r.member_id == r.leader
        client.skip = r.skip_assignment
        if r.skip_assignment:
            g = self.c.groups[GROUP]
            assert client.v9 and client.leader and g.state is GroupState.STABLE, "skip told"
        client.members = tuple((m, i) for m, i, _ in r.members)
        client.assignment = None
        if client.leader:
            assert r.member_id in {m for m, _ in client.members}

    def _synced(self, client: Client, r: SyncResult) -> None:
        if r.error is ErrorCode.none:
            assigned = self.told.assigned.get(client.generation, {})
            who = client.instance_id or client.member_id
            assert r.assignment == assigned.get(who, b""), "wrong assignment"
            client.assignment = r.assignment
        elif r.error in (ErrorCode.unknown_member_id, ErrorCode.fenced_instance_id):
            client.member_id, client.generation = "", -1

    def _group_state(self) -> GroupState:
        g = self.c.groups.get(GROUP)
        return GroupState.EMPTY if g is None else g.state

    # -- rules --------------------------------------------------------------------------

    @initialize(
        max_size=st.one_of(st.just(UNLIMITED), st.sampled_from([1, 2, 3])),
        max_groups=st.one_of(st.just(UNLIMITED), st.sampled_from([1, 2])),
    )
    def limits(self, max_size: int, max_groups: int) -> None:
        self.c = Coordinator(
            Limits(initial_rebalance_delay_ms=3_000, max_size=max_size, max_groups=max_groups)
        )

    @rule(n=st.integers(0, 2))
    def another_group_commits(self, n: int) -> None:
        """A standalone consumer of another group: it takes one of max_groups."""
        other = f"other{n}"
        known = other in self.c.groups
        code = self.c.commit_allowed(other, -1, "", None, self.now)
        if code is ErrorCode.coordinator_not_available:
            assert not known and len(self.c.groups) >= self.c.limits.max_groups
        else:
            assert code is ErrorCode.none

    @rule(
        static=st.booleans(),
        protocols=st.sampled_from(PROTOCOLS),
        v4=st.booleans(),
        v9=st.booleans(),
    )
    def new_client_joins(
        self, static: bool, protocols: tuple[tuple[str, bytes], ...], v4: bool, v9: bool
    ) -> None:
        name = f"c{len(self.clients)}"
        client = Client(name, f"i{len(self.clients) % 3}" if static else None, v9=v9)
        self.clients.append(client)
        self._join(client, protocols, v4)

    @precondition(lambda self: self.clients)
    @rule(data=st.data(), protocols=st.sampled_from(PROTOCOLS), v4=st.booleans())
    def client_joins(
        self, data: st.DataObject, protocols: tuple[tuple[str, bytes], ...], v4: bool
    ) -> None:
        client = data.draw(st.sampled_from(self.clients))
        if client.join_token is None:
            self._join(client, protocols, v4)

    def _join(self, client: Client, protocols: tuple[tuple[str, bytes], ...], v4: bool) -> None:
        token = self._token("join", client)
        client.join_token = token
        request = JoinRequest(
            GROUP, client.member_id, client.instance_id, "consumer", protocols,
            SESSION_MS, REBALANCE_MS, client.name, "127.0.0.1", v4, client.v9,
        )  # fmt: skip
        g = self.c.groups.get(GROUP)
        held = len(g.members) + len(g.pending) if g is not None else 0
        replacing = g is not None and client.instance_id in g.static
        existed = g is not None
        result = self.c.join(request, token, self.now)
        if result is not PARKED:
            self.open.pop(token)
            client.join_token = None
            if result.error is ErrorCode.group_max_size_reached:
                assert held >= self.c.limits.max_size, "refused below group.max.size"
                assert not request.member_id and not replacing, "refused one already in"
            if result.error is ErrorCode.coordinator_not_available:
                assert not existed and len(self.c.groups) >= self.c.limits.max_groups
            self._joined(client, result)
        self._drain()

    @precondition(
        lambda self: any(c.generation >= 0 and c.sync_token is None for c in self.clients)
    )
    @rule(data=st.data())
    def client_syncs(self, data: st.DataObject) -> None:
        client = data.draw(
            st.sampled_from([c for c in self.clients if c.generation >= 0 and c.sync_token is None])
        )
        self._sync(client)

    def _sync(self, client: Client) -> None:
        assignments: dict[str, bytes] = {}
        if client.leader and not client.skip:
            assignments = {m: f"{m}@{client.generation}".encode() for m, _ in client.members}
            # Only the first can take effect: a Stable group answers later syncs
            # with the assignment it has.
            self.told.assigned.setdefault(
                client.generation, {i or m: assignments[m] for m, i in client.members}
            )
        token = self._token("sync", client)
        client.sync_token = token
        result = self.c.sync(
            GROUP,
            client.generation,
            client.member_id,
            client.instance_id,
            assignments,
            token,
            self.now,
        )
        if result is not PARKED:
            self.open.pop(token)
            client.sync_token = None
            self._synced(client, result)
        self._drain()

    @precondition(lambda self: any(c.member_id for c in self.clients))
    @rule(data=st.data())
    def client_heartbeats(self, data: st.DataObject) -> None:
        client = data.draw(st.sampled_from([c for c in self.clients if c.member_id]))
        code = self.c.heartbeat(
            GROUP, client.generation, client.member_id, client.instance_id, self.now
        )
        g = self.c.groups.get(GROUP)
        if code is ErrorCode.none:
            assert g is not None and client.member_id in g.members
            assert client.generation == g.generation
        self._drain()

    @precondition(lambda self: self.clients)
    @rule(data=st.data(), stale=st.integers(0, 2))
    def client_commits(self, data: st.DataObject, stale: int) -> None:
        client = data.draw(st.sampled_from(self.clients))
        generation = client.generation - stale if client.generation >= 0 else -1
        g = self.c.groups.get(GROUP)
        current = g.generation if g is not None else None
        code = self.c.commit_allowed(
            GROUP, generation, client.member_id, client.instance_id, self.now
        )
        if code is ErrorCode.none and generation >= 0:
            assert generation == current, "a commit from a stale generation was accepted"
        if code is ErrorCode.none and generation < 0:
            assert current is None or self._group_state() is GroupState.EMPTY
        if code is ErrorCode.coordinator_not_available:
            assert g is None and len(self.c.groups) >= self.c.limits.max_groups

    @precondition(lambda self: any(c.member_id for c in self.clients))
    @rule(data=st.data(), by_instance=st.booleans())
    def client_leaves(self, data: st.DataObject, by_instance: bool) -> None:
        client = data.draw(st.sampled_from([c for c in self.clients if c.member_id]))
        name = (client.member_id, client.instance_id)
        if by_instance and client.instance_id is not None:
            name = ("", client.instance_id)
        codes = self.c.leave(GROUP, [name], self.now)
        assert len(codes) == 1
        self._drain()
        if codes[0] is ErrorCode.none:
            client.member_id, client.generation = "", -1

    @precondition(lambda self: self.clients)
    @rule(protocols=st.sampled_from(PROTOCOLS))
    def clients_follow_the_protocol(self, protocols: tuple[tuple[str, bytes], ...]) -> None:
        """What well-behaved consumers do next, all of them, then 3 s pass: those
        out of the group or told to rebalance (re)join, those with a generation and
        no assignment sync, the rest heartbeat."""
        for client in list(self.clients):
            if client.join_token is not None or client.sync_token is not None:
                continue
            code = ErrorCode.none
            if client.member_id and client.generation >= 0:
                code = self.c.heartbeat(
                    GROUP, client.generation, client.member_id, client.instance_id, self.now
                )
            if client.generation < 0 or code is not ErrorCode.none:
                self._join(client, protocols, v4=True)
            elif client.assignment is None:
                self._sync(client)
        self.time_passes(3_000)

    @precondition(lambda self: self.clients)
    @rule()
    def clients_settle(self) -> None:
        """Several rounds of well-behaved consumers: most groups reach Stable."""
        for _ in range(3):
            self.clients_follow_the_protocol(PROTOCOLS[0])

    @rule(ms=st.sampled_from([0, 100, 1_000, 3_000, 6_000, 11_000, 25_000]))
    def time_passes(self, ms: int) -> None:
        self.now += ms
        self.c.tick(self.now)
        self._drain()

    @rule()
    def time_reaches_the_next_deadline(self) -> None:
        """What the service's timer task does: sleep until next_deadline, then tick."""
        deadline = self.c.next_deadline()
        if deadline is not None:
            self.now = max(self.now, deadline)
        self.c.tick(self.now)
        self._drain()

    @rule(ok=st.booleans())
    def storage_health(self, ok: bool) -> None:
        self.store_ok = ok

    # -- invariants -------------------------------------------------------------------

    @invariant()
    def the_limits_hold(self) -> None:
        g = self.c.groups.get(GROUP)
        if g is not None:
            assert len(g.members) + len(g.pending) <= self.c.limits.max_size
        assert len(self.c.groups) <= self.c.limits.max_groups

    @invariant()
    def the_next_deadline_is_never_late(self) -> None:
        """The schedule re-plans only touched groups; no timeout may be missed by it."""
        due = [t for g in self.c.groups.values() for t in deadlines(g)]
        if due:
            planned = self.c.next_deadline()
            assert planned is not None and planned <= min(due), (planned, min(due))

    @invariant()
    def parked_requests_are_held_by_members(self) -> None:
        g = self.c.groups.get(GROUP)
        held = set()
        if g is not None:
            for m in g.members.values():
                held |= {t for t in (m.join_token, m.sync_token) if t is not None}
        assert held == set(self.open), "a parked request was lost or answered twice"

    @invariant()
    def one_leader_per_generation(self) -> None:
        """Several member ids may be named leader of one generation only when they
        are one static member that rejoined under a new id."""
        for gen, ids in self.told.leaders.items():
            who = {self.instance_of.get(m, m) for m in ids}
            assert len(who) == 1, f"generation {gen} had leaders {who}"

    @invariant()
    def a_generation_holds_only_members_that_joined_it(self) -> None:
        """A dynamic member that did not rejoin is not handed partitions in the new
        generation (static members keep their place while they restart)."""
        g = self.c.groups.get(GROUP)
        if g is None or g.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        dynamic = {m.member_id for m in g.members.values() if m.instance_id is None}
        assert dynamic <= self.told.joined.get(g.generation, set())

    @invariant()
    def no_members_means_empty(self) -> None:
        g = self.c.groups.get(GROUP)
        if g is not None and not g.members and not g.pending:
            assert g.state is GroupState.EMPTY, g.state
        if g is not None and g.state is GroupState.EMPTY:
            assert not g.members

    @invariant()
    def stable_members_have_their_assignment(self) -> None:
        g = self.c.groups.get(GROUP)
        if g is None or g.state is not GroupState.STABLE:
            return
        assigned = self.told.assigned.get(g.generation, {})
        for m in g.members.values():
            assert m.assignment == assigned.get(m.instance_id or m.member_id, b"")

    def teardown(self) -> None:
        """Nobody heartbeats any more: within the timeouts everything is answered
        and the group ends Empty."""
        for _ in range(3):
            self.now += 400_000
            self.c.tick(self.now)
            self._drain()
        assert not self.open, "requests still parked after every timeout passed"
        assert self._group_state() is GroupState.EMPTY


TestCoordinator = CoordinatorMachine.TestCase
TestCoordinator.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
