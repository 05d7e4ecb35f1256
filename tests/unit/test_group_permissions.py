"""Who may use a consumer group, from Pulsar's permissions: the roles a group's
subscription permission names (what `kafka-acls --add --group g --operation Read`
grants through kop) whether or not they may consume yet, as with Kafka's READ on a
group; a group no permission names is open to any role that may consume in the
namespace (Pulsar's rule for subscriptions), and never to others."""

from __future__ import annotations

from kop.security.authorizer import Authorizer
from kop.security.principal import Principal
from kop.storage.naming import Namespace
from tests.sim.memory_admin import MemoryPermissions

NS = Namespace("acme", "orders")


async def may_use(store: MemoryPermissions, role: str, group: str) -> bool:
    authorizer = Authorizer(store, frozenset({"root"}), subscription_of=lambda g: f"sub-{g}")
    return await authorizer.bind(Principal(role, NS, "PLAIN", None)).group(NS, group)


async def test_a_group_named_for_roles_is_theirs_even_before_they_may_consume() -> None:
    store = MemoryPermissions()
    await store.set_subscription_roles(NS, "sub-reserved", frozenset({"alice"}))
    await store.grant(NS, "t1", "bob", frozenset({"consume"}))
    assert await may_use(store, "alice", "reserved")  # Kafka: READ on the group, no topic yet
    assert not await may_use(store, "bob", "reserved")  # may consume, but the group is alice's
    assert await may_use(store, "root", "reserved")  # a super user


async def test_a_group_nobody_was_named_for_needs_consume_somewhere_in_the_namespace() -> None:
    store = MemoryPermissions()
    await store.grant(NS, "t1", "bob", frozenset({"consume"}))
    await store.grant(NS, "t2", "carol", frozenset({"produce"}))
    assert await may_use(store, "bob", "open")
    assert not await may_use(store, "carol", "open")  # produce is not enough
    assert not await may_use(store, "alice", "open")  # no grant at all
