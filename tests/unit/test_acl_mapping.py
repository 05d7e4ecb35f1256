"""Kafka ACLs over Pulsar's permissions (kop.security.acls, AclAdmin over the Pulsar
admin API's in-memory double): what Pulsar can hold round-trips, what it cannot is
refused with the reason, and any sequence of adds and removes leaves exactly the
ACLs a simple model says."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kop.groups.mirror_names import SubscriptionNames
from kop.security.acl_admin import AclAdmin
from kop.security.acls import Binding, Filter, Op, Pattern, Permission, Resource, Unmappable
from kop.security.authorizer import Authorizer
from kop.storage.naming import Namespace
from tests.sim.memory_admin import MemoryPermissions

NS = Namespace("acme", "orders")
ANY = Filter(Resource.ANY, None, Pattern.ANY, None, None, Op.ANY, Permission.ANY)


def admin() -> AclAdmin:
    names = SubscriptionNames()
    return AclAdmin(Authorizer(MemoryPermissions(), frozenset(), names.of), names)


def allow(resource: Resource, name: str, role: str, op: Op) -> Binding:
    return Binding(resource, name, Pattern.LITERAL, f"User:{role}", "*", op, Permission.ALLOW)


def run(coro: object) -> object:
    loop = asyncio.new_event_loop()  # closed after: an open one leaks its self-pipe sockets
    try:
        return loop.run_until_complete(coro)  # type: ignore[arg-type]
    finally:
        loop.close()


def test_what_pulsar_cannot_hold_is_refused_with_the_reason() -> None:
    a = admin()
    base = allow(Resource.TOPIC, "t", "dave", Op.READ)
    cases = {
        "no DENY": Binding(*[*vars_of(base)[:6], Permission.DENY]),
        "never a prefix": Binding(base.resource, "t", Pattern.PREFIXED, *vars_of(base)[3:]),
        "host": Binding(*vars_of(base)[:4], "10.0.0.1", *vars_of(base)[5:]),
        "ALTER on a topic": allow(Resource.TOPIC, "t", "dave", Op.ALTER),
        "ALTER on CLUSTER": allow(Resource.CLUSTER, "kafka-cluster", "dave", Op.ALTER),
        "User:<role>": Binding(*vars_of(base)[:3], "Group:ops", *vars_of(base)[4:]),
    }
    for reason, binding in cases.items():
        with pytest.raises(Unmappable, match=reason):
            run(a.create(NS, binding))
    assert run(a.describe(NS, ANY)) == []


def vars_of(b: Binding) -> list[object]:
    return [b.resource, b.name, b.pattern, b.principal, b.host, b.operation, b.permission]


def test_implied_acls_are_accepted_without_a_change() -> None:
    a = admin()
    for binding in (
        allow(Resource.TOPIC, "t", "dave", Op.DESCRIBE),
        allow(Resource.TOPIC, "t", "dave", Op.CREATE),
        allow(Resource.CLUSTER, "kafka-cluster", "dave", Op.IDEMPOTENT_WRITE),
        allow(Resource.GROUP, "*", "dave", Op.READ),
    ):
        run(a.create(NS, binding))
    assert run(a.describe(NS, ANY)) == []


ROLES = st.sampled_from(["dave", "erin"])
TOPICS = st.sampled_from(["*", "t1", "t2"])
GROUPS = st.sampled_from(["g1", "g2"])


class AclMachine(RuleBasedStateMachine):
    """Adds and removes of mappable ACLs; after each step, DescribeAcls shows exactly
    the model's: READ/WRITE per (topic or *, role), READ per (group, role), and READ
    on every group for a role with READ on the whole namespace."""

    def __init__(self) -> None:
        super().__init__()
        self.admin = admin()
        self.topics: set[tuple[str, str, Op]] = set()
        self.groups: set[tuple[str, str]] = set()

    @rule(topic=TOPICS, role=ROLES, op=st.sampled_from([Op.READ, Op.WRITE, Op.ALL]))
    def add_topic(self, topic: str, role: str, op: Op) -> None:
        run(self.admin.create(NS, allow(Resource.TOPIC, topic, role, op)))
        for one in (Op.READ, Op.WRITE) if op is Op.ALL else (op,):
            self.topics.add((topic, role, one))

    @rule(group=GROUPS, role=ROLES)
    def add_group(self, group: str, role: str) -> None:
        run(self.admin.create(NS, allow(Resource.GROUP, group, role, Op.READ)))
        self.groups.add((group, role))

    @rule(topic=TOPICS, role=ROLES, op=st.sampled_from([Op.READ, Op.WRITE, Op.ANY]))
    def remove_topic(self, topic: str, role: str, op: Op) -> None:
        wanted = Filter(Resource.TOPIC, topic, Pattern.LITERAL, f"User:{role}", None, op,
                        Permission.ANY)  # fmt: skip
        removed = run(self.admin.delete(NS, wanted))
        assert all(why is None for _b, why in removed)  # type: ignore[attr-defined]
        self.topics -= {(t, r, o) for t, r, o in self.topics
                        if (t, r) == (topic, role) and op in (Op.ANY, o)}  # fmt: skip

    @rule(role=ROLES)
    def remove_role_groups(self, role: str) -> None:
        wanted = Filter(Resource.GROUP, None, Pattern.ANY, f"User:{role}", None, Op.ANY,
                        Permission.ANY)  # fmt: skip
        for b, why in run(self.admin.delete(NS, wanted)):  # type: ignore[attr-defined]
            assert (why is None) == (b.name != "*")  # READ on every group: revoke consume
        self.groups -= {(g, r) for g, r in self.groups if r == role}

    @invariant()
    def described_is_the_model(self) -> None:
        found = {(b.resource, b.name, b.principal[5:], b.operation)
                 for b in run(self.admin.describe(NS, ANY))}  # type: ignore[attr-defined]  # fmt: skip
        want = {(Resource.TOPIC, t, r, o) for t, r, o in self.topics}
        want |= {(Resource.GROUP, g, r, Op.READ) for g, r in self.groups}
        want |= {(Resource.GROUP, "*", r, Op.READ) for t, r, o in self.topics
                 if t == "*" and o is Op.READ}  # fmt: skip
        assert found == want


TestAclMachine = AclMachine.TestCase
TestAclMachine.settings = settings(max_examples=150, stateful_step_count=15, deadline=None)
