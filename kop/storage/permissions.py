"""Pulsar's permissions as plain data, and the port kop reads and changes them through.

What Pulsar keeps in a namespace's policies (`auth_policies`): the actions each role
may take on the whole namespace, on single topics, and which roles may use a
subscription name. kop checks Kafka clients against exactly these, so a grant made
with `pulsar-admin` holds for Kafka clients and a Kafka ACL made through kop is a
Pulsar grant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kop.storage.naming import Namespace

PRODUCE = "produce"
CONSUME = "consume"
# Pulsar's other AuthActions (functions, sources, sinks, packages) mean nothing to Kafka.

Grants = Mapping[str, frozenset[str]]  # role -> actions


@dataclass(frozen=True)
class NamespaceGrants:
    namespace: Grants = field(default_factory=dict)
    topics: Mapping[str, Grants] = field(default_factory=dict)  # topic local name -> grants
    # subscription -> the only roles that may use it (a subscription not named: anyone
    # allowed to consume)
    subscriptions: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def actions(self, role: str, topic: str | None = None) -> frozenset[str]:
        """What `role` may do on `topic` (None: on the namespace as a whole)."""
        own = self.namespace.get(role, frozenset())
        if topic is None:
            return own
        return own | self.topics.get(topic, {}).get(role, frozenset())

    def anywhere(self, role: str) -> frozenset[str]:
        """What `role` may do on the namespace or on any one of its topics."""
        found = set(self.namespace.get(role, ()))
        for grants in self.topics.values():
            found |= grants.get(role, frozenset())
        return frozenset(found)


class PermissionStore(Protocol):
    async def namespace_grants(self, ns: Namespace) -> NamespaceGrants | None:
        """None: the namespace does not exist."""
        ...

    async def tenant_admins(self, tenant: str) -> frozenset[str] | None:
        """The tenant's admin roles; None: the tenant does not exist."""
        ...

    async def grant(
        self, ns: Namespace, topic: str | None, role: str, actions: frozenset[str]
    ) -> None:
        """Set `role`'s actions on the namespace (topic None) or one topic; an empty
        set revokes them all."""
        ...

    async def set_subscription_roles(
        self, ns: Namespace, subscription: str, roles: frozenset[str]
    ) -> None:
        """The only roles that may use `subscription` (empty: no restriction)."""
        ...
