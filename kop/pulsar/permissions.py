"""Pulsar's permissions through its admin REST API: a namespace's `auth_policies` (one
GET holds namespace, topic and subscription grants), a tenant's admin roles, and
the grant and revoke calls `pulsar-admin` makes. kop's role must be an admin of
the tenants it serves (docs/security.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kop.storage.naming import Namespace
from kop.storage.permissions import Grants, NamespaceGrants
from kop.storage.types import AdminError

Request = Callable[..., Awaitable[Any]]
_PREFIX = "persistent://"


class PulsarPermissions:
    def __init__(self, request: Request) -> None:
        self._request = request

    async def namespace_grants(self, ns: Namespace) -> NamespaceGrants | None:
        policies = await self._request("GET", f"namespaces/{ns.path}", ok_missing=True)
        if policies is None:
            return None
        auth = policies.get("auth_policies") or {}
        prefix = f"{_PREFIX}{ns.path}/"
        topics = {
            name[len(prefix) :]: _grants(grants)
            for name, grants in (auth.get("destination_auth") or {}).items()
            if name.startswith(prefix)
        }
        subscriptions = {
            sub: frozenset(roles)
            for sub, roles in (auth.get("subscription_auth_roles") or {}).items()
        }
        return NamespaceGrants(_grants(auth.get("namespace_auth") or {}), topics, subscriptions)

    async def tenant_admins(self, tenant: str) -> frozenset[str] | None:
        info = await self._request("GET", f"tenants/{tenant}", ok_missing=True)
        return None if info is None else frozenset(info.get("adminRoles") or ())

    async def grant(
        self, ns: Namespace, topic: str | None, role: str, actions: frozenset[str]
    ) -> None:
        base = f"namespaces/{ns.path}" if topic is None else f"persistent/{ns.path}/{topic}"
        path = f"{base}/permissions/{role}"
        if actions:
            await self._request("POST", path, sorted(actions))
            return
        try:
            await self._request("DELETE", path)
        except AdminError as exc:
            if exc.status not in (404, 412):  # nothing granted there: nothing to revoke
                raise

    async def set_subscription_roles(
        self, ns: Namespace, subscription: str, roles: frozenset[str]
    ) -> None:
        current = (await self.namespace_grants(ns) or NamespaceGrants()).subscriptions
        for role in current.get(subscription, frozenset()) - roles:
            await self._request("DELETE", f"namespaces/{ns.path}/permissions/{subscription}/{role}")
        if roles:
            path = f"namespaces/{ns.path}/permissions/subscription/{subscription}"
            await self._request("POST", path, sorted(roles))


def _grants(raw: Mapping[str, Any]) -> Grants:
    return {role: frozenset(str(a) for a in actions) for role, actions in raw.items()}
