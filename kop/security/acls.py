"""Kafka ACLs as a view of Pulsar's permissions, and Kafka ACL changes as Pulsar grants
(docs/security.md, "Kafka ACLs"). Sans-IO: bindings in, grants out.

A principal's world is its namespace: `TOPIC *` is the namespace, `TOPIC t` one
topic of it. `produce` reads as WRITE, `consume` as READ (on the topics, and on
every group the namespace does not reserve); a subscription Pulsar reserves for
some roles reads as READ on that group for each; the tenant's admins have ALL.
What Pulsar cannot hold (DENY, prefixes, hosts, single operations such as ALTER)
is refused with a message that says so; what produce or consume already imply
(DESCRIBE, CREATE, IDEMPOTENT_WRITE, READ on every group) is accepted and holds
without a change.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kop.storage.permissions import CONSUME, PRODUCE, NamespaceGrants


class Resource(enum.IntEnum):
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4


class Pattern(enum.IntEnum):
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Op(enum.IntEnum):
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class Permission(enum.IntEnum):
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"
USER = "User:"
# (resource, operation) that produce or consume already give
_IMPLIED = {
    (Resource.TOPIC, Op.DESCRIBE),  # lookup, and auto-creation, come with either
    (Resource.TOPIC, Op.CREATE),
    (Resource.CLUSTER, Op.IDEMPOTENT_WRITE),  # comes with produce
}
_ACTION: dict[int, str] = {Op.READ: CONSUME, Op.WRITE: PRODUCE}


@dataclass(frozen=True, slots=True)
class Binding:
    resource: int
    name: str
    pattern: int
    principal: str
    host: str
    operation: int
    permission: int


@dataclass(frozen=True, slots=True)
class Filter:
    resource: int
    name: str | None
    pattern: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches(self, b: Binding) -> bool:
        if self.resource != Resource.ANY and self.resource != b.resource:
            return False
        if not self._name_matches(b):
            return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != Op.ANY and self.operation != b.operation:
            return False
        return self.permission == Permission.ANY or self.permission == b.permission

    def _name_matches(self, b: Binding) -> bool:
        if self.pattern == Pattern.MATCH:
            return self.name is None or b.name in (self.name, WILDCARD)
        if self.pattern not in (Pattern.ANY, b.pattern):
            return False
        return self.name is None or self.name == b.name


class Unmappable(ValueError):
    """A Kafka ACL that Pulsar's permissions cannot express."""


@dataclass(frozen=True, slots=True)
class Change:
    """One grant to make: actions for `role` on the namespace (topic None) or a topic,
    or (group set) the roles a group's subscription is reserved for."""

    role: str
    topic: str | None = None
    actions: frozenset[str] = frozenset()
    group: str | None = None


def bindings(
    grants: NamespaceGrants, admins: frozenset[str], group_of: dict[str, str]
) -> list[Binding]:
    """Every ACL the namespace's permissions amount to; `group_of` maps a reserved
    subscription name to its group."""
    out: list[Binding] = []
    for role in sorted(admins):
        out += [_allow(Resource.TOPIC, WILDCARD, role, Op.ALL),
                _allow(Resource.GROUP, WILDCARD, role, Op.ALL)]  # fmt: skip
    for role, actions in sorted(grants.namespace.items()):
        out += _topic_bindings(WILDCARD, role, actions)
        if CONSUME in actions:
            out.append(_allow(Resource.GROUP, WILDCARD, role, Op.READ))
    for topic, by_role in sorted(grants.topics.items()):
        for role, actions in sorted(by_role.items()):
            out += _topic_bindings(topic, role, actions)
    for subscription, roles in sorted(grants.subscriptions.items()):
        group = group_of.get(subscription)
        if group is not None:
            out += [_allow(Resource.GROUP, group, role, Op.READ) for role in sorted(roles)]
    return out


def change_for(b: Binding) -> Change | None:
    """The grant a new ACL needs (None: already implied); raises Unmappable."""
    role = _role(b.principal)
    if b.permission != Permission.ALLOW:
        raise Unmappable("Pulsar permissions only allow: there is no DENY")
    if b.pattern != Pattern.LITERAL:
        raise Unmappable("Pulsar permissions name a topic or a namespace, never a prefix")
    if b.host != WILDCARD:
        raise Unmappable("Pulsar permissions do not depend on the client's host: use '*'")
    if (b.resource, b.operation) in _IMPLIED:
        return None
    if b.resource == Resource.TOPIC:
        actions = _actions(b.operation)
        return Change(role, None if b.name == WILDCARD else b.name, actions)
    if b.resource == Resource.GROUP and b.operation in (Op.READ, Op.ALL):
        if b.name == WILDCARD:
            return None  # any group the namespace does not reserve comes with consume
        return Change(role, group=b.name)
    raise Unmappable(
        f"{_name(Op, b.operation)} on {_name(Resource, b.resource)}: no Pulsar permission"
    )


def removal_for(b: Binding, admins: frozenset[str]) -> Change:
    """The revocation that removes an existing binding; raises Unmappable."""
    role = _role(b.principal)
    if role in admins and b.operation == Op.ALL:
        raise Unmappable("a tenant's admin roles change with `pulsar-admin tenants update`")
    if b.resource == Resource.TOPIC:
        return Change(role, None if b.name == WILDCARD else b.name, _actions(b.operation))
    if b.resource == Resource.GROUP and b.name != WILDCARD:
        return Change(role, group=b.name)
    raise Unmappable("READ on every group comes with consume: revoke consume on the topics")


def _actions(op: int) -> frozenset[str]:
    if op == Op.ALL:
        return frozenset({PRODUCE, CONSUME})
    action = _ACTION.get(op)
    if action is None:
        why = f"{_name(Op, op)} on a topic has no Pulsar permission (READ, WRITE or ALL)"
        raise Unmappable(why)
    return frozenset({action})


def _name(kind: type[enum.IntEnum], value: int) -> str:
    try:
        return kind(value).name
    except ValueError:
        return f"{kind.__name__.lower()} {value}"


def _role(principal: str) -> str:
    if not principal.startswith(USER) or len(principal) == len(USER):
        raise Unmappable(f"principal {principal!r} is not User:<role>")
    return principal[len(USER) :]


def _allow(resource: Resource, name: str, role: str, op: Op) -> Binding:
    return Binding(resource, name, Pattern.LITERAL, USER + role, WILDCARD, op, Permission.ALLOW)


def _topic_bindings(name: str, role: str, actions: frozenset[str]) -> list[Binding]:
    ops = [Op.WRITE] * (PRODUCE in actions) + [Op.READ] * (CONSUME in actions)
    return [_allow(Resource.TOPIC, name, role, op) for op in ops]
