"""Kafka's ACL requests carried out on Pulsar's permissions (kop.security.acls maps
them): read a namespace's grants, change one role's, and let the authorizer's cache
know at once. Only the namespace's tenant admins (and superusers) may, as Kafka
asks ALTER (or DESCRIBE) on the cluster."""

from __future__ import annotations

from typing import Protocol

from kop.security.acls import Binding, Change, Filter, Unmappable, bindings, change_for, removal_for
from kop.security.authorizer import Authorizer
from kop.storage.naming import Namespace
from kop.storage.permissions import NamespaceGrants


class SubscriptionNaming(Protocol):
    def of(self, group: str) -> str: ...

    def group_of(self, subscription: str) -> str | None: ...


class AclAdmin:
    def __init__(self, authorizer: Authorizer, names: SubscriptionNaming) -> None:
        self._auth = authorizer
        self._names = names

    async def may_manage(self, role: str, ns: Namespace) -> bool:
        return await self._auth.is_admin(role, ns.tenant)

    async def describe(self, ns: Namespace, wanted: Filter) -> list[Binding]:
        grants = await self._auth.store.namespace_grants(ns) or NamespaceGrants()
        admins = await self._auth.store.tenant_admins(ns.tenant) or frozenset()
        group_of = {s: g for s in grants.subscriptions if (g := self._names.group_of(s))}
        return [b for b in bindings(grants, admins, group_of) if wanted.matches(b)]

    async def create(self, ns: Namespace, binding: Binding) -> None:
        """Raises Unmappable for what Pulsar cannot hold."""
        change = change_for(binding)
        if change is not None:
            await self._apply(ns, change, add=True)

    async def delete(self, ns: Namespace, wanted: Filter) -> list[tuple[Binding, str | None]]:
        """Each binding the filter matched, with why it stayed (None: removed)."""
        admins = await self._auth.store.tenant_admins(ns.tenant) or frozenset()
        out: list[tuple[Binding, str | None]] = []
        for b in await self.describe(ns, wanted):
            try:
                await self._apply(ns, removal_for(b, admins), add=False)
                out.append((b, None))
            except Unmappable as exc:
                out.append((b, str(exc)))
        return out

    async def _apply(self, ns: Namespace, change: Change, add: bool) -> None:
        store = self._auth.store
        grants = await store.namespace_grants(ns) or NamespaceGrants()
        if change.group is not None:
            subscription = self._names.of(change.group)
            roles = grants.subscriptions.get(subscription, frozenset())
            roles = roles | {change.role} if add else roles - {change.role}
            await store.set_subscription_roles(ns, subscription, roles)
        else:
            level = (
                grants.namespace if change.topic is None else grants.topics.get(change.topic, {})
            )
            now = level.get(change.role, frozenset())
            after = now | change.actions if add else now - change.actions
            await store.grant(ns, change.topic, change.role, after)
        self._auth.changed(ns)
