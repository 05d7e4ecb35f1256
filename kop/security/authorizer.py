"""Kafka operations checked against Pulsar's permissions of the authenticated role, as
Pulsar's own PulsarAuthorizationProvider decides them: superusers and the tenant's
admins may do anything in it; `produce` lets a role write, `consume` read (and use
a subscription the namespace does not reserve for other roles); either lets it
see the topic. What Pulsar says is cached for `refresh_s` at most, so a grant or a
revoke made in Pulsar holds for Kafka clients within that bound."""

from __future__ import annotations

import asyncio
import enum
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from kop.security.principal import Principal
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.permissions import CONSUME, PRODUCE, NamespaceGrants, PermissionStore

K = TypeVar("K")
V = TypeVar("V")


class TopicOp(enum.Enum):
    PRODUCE = "produce"  # Produce
    CONSUME = "consume"  # Fetch, ListOffsets, OffsetCommit and OffsetFetch on it
    DESCRIBE = "describe"  # Metadata, DescribeConfigs, OffsetForLeaderEpoch
    ALTER = "alter"  # CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs, DeleteRecords


class Access(Protocol):
    """What one connection's principal may do."""

    async def topic(self, topic: PulsarTopic, op: TopicOp) -> bool: ...

    async def group(self, ns: Namespace, group: str) -> bool:
        """Join, commit for, describe or delete `group` (as a subscription in `ns`): the
        roles the group's subscription permission names (Kafka's READ on the group), or,
        when it names none, any role with consume in `ns`."""
        ...

    async def group_topic(self, topic: PulsarTopic, group: str) -> bool:
        """Commit or fetch offsets of `group` on `topic`."""
        ...

    async def idempotent_write(self, ns: Namespace) -> bool:
        """Get a producer id: allowed to produce somewhere in `ns`."""
        ...

    async def namespace_use(self, ns: Namespace) -> bool:
        """Read what belongs to `ns` as a whole (its Schema Registry subjects): allowed to
        produce or consume somewhere in it."""
        ...

    async def cluster(self) -> bool:
        """Broker-wide operations (broker configs, log dirs): superusers only."""
        ...

    async def tenant_admin(self, ns: Namespace) -> bool:
        """Alter what belongs to `ns` beyond topics (a group's configs: Kafka's
        ALTER_CONFIGS on the group): the tenant's admins and superusers, as a topic's
        ALTER."""
        ...


class _Fixed:
    """The same answer to everything: no authorization (allow), or no principal (deny)."""

    def __init__(self, answer: bool) -> None:
        self._answer = answer

    async def topic(self, topic: PulsarTopic, op: TopicOp) -> bool:
        return self._answer

    async def group(self, ns: Namespace, group: str) -> bool:
        return self._answer

    async def group_topic(self, topic: PulsarTopic, group: str) -> bool:
        return self._answer

    async def idempotent_write(self, ns: Namespace) -> bool:
        return self._answer

    async def namespace_use(self, ns: Namespace) -> bool:
        return self._answer

    async def cluster(self) -> bool:
        return self._answer

    async def tenant_admin(self, ns: Namespace) -> bool:
        return self._answer


ALLOW_ALL: Access = _Fixed(True)
DENY_ALL: Access = _Fixed(False)


class _Cache(Generic[K, V]):
    """Answers younger than `ttl_s`, at most `size` of them; one fetch per key at a time."""

    def __init__(self, fetch: Callable[[K], Awaitable[V]], ttl_s: float, size: int,
                 clock: Callable[[], float]) -> None:  # fmt: skip
        self._fetch = fetch
        self._ttl_s = ttl_s
        self._size = size
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._pending: dict[K, asyncio.Future[V]] = {}

    async def get(self, key: K) -> V:
        hit = self._entries.get(key)
        if hit is not None and hit[0] > self._clock():
            return hit[1]
        pending = self._pending.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._load(key))
            self._pending[key] = pending
        return await asyncio.shield(pending)

    async def _load(self, key: K) -> V:
        try:
            value = await self._fetch(key)
        finally:
            self._pending.pop(key, None)
        self._entries[key] = (self._clock() + self._ttl_s, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return value

    def forget(self, key: K) -> None:
        self._entries.pop(key, None)


class Authorizer:
    def __init__(
        self,
        store: PermissionStore,
        superusers: frozenset[str],
        subscription_of: Callable[[str], str],
        refresh_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = 10_000,
    ) -> None:
        self.store = store
        self.superusers = superusers
        self.subscription_of = subscription_of  # a group's mirrored subscription name
        self._grants = _Cache(store.namespace_grants, refresh_s, max_entries, clock)
        self._admins = _Cache(store.tenant_admins, refresh_s, max_entries, clock)

    def bind(self, principal: Principal) -> Access:
        return RoleAccess(self, principal.role)

    async def grants(self, ns: Namespace) -> NamespaceGrants | None:
        return await self._grants.get(ns)

    async def is_admin(self, role: str, tenant: str) -> bool:
        if role in self.superusers:
            return True
        return role in (await self._admins.get(tenant) or frozenset())

    def changed(self, ns: Namespace) -> None:
        """kop itself changed `ns`'s grants (an ACL request): its next answer is fresh."""
        self._grants.forget(ns)


class RoleAccess:
    def __init__(self, authorizer: Authorizer, role: str) -> None:
        self._auth = authorizer
        self._role = role

    async def topic(self, topic: PulsarTopic, op: TopicOp) -> bool:
        if not self._role:
            return False
        if await self._auth.is_admin(self._role, topic.namespace.tenant):
            return True
        if op is TopicOp.ALTER:
            return False
        grants = await self._auth.grants(topic.namespace)
        actions = grants.actions(self._role, topic.local) if grants else frozenset()
        if op is TopicOp.DESCRIBE:
            return bool(actions & {PRODUCE, CONSUME})
        return op.value in actions

    async def group(self, ns: Namespace, group: str) -> bool:
        if not self._role:
            return False
        if await self._auth.is_admin(self._role, ns.tenant):
            return True
        grants = await self._auth.grants(ns)
        if grants is None:
            return False
        roles = grants.subscriptions.get(self._auth.subscription_of(group))
        if roles:  # named for the group (kafka-acls --group): its roles, consume or not
            return self._role in roles
        return CONSUME in grants.anywhere(self._role)

    async def group_topic(self, topic: PulsarTopic, group: str) -> bool:
        if not await self.topic(topic, TopicOp.CONSUME):
            return False
        if await self._auth.is_admin(self._role, topic.namespace.tenant):
            return True
        grants = await self._auth.grants(topic.namespace)
        return grants is not None and self._may_subscribe(grants, group)

    async def idempotent_write(self, ns: Namespace) -> bool:
        if not self._role:
            return False
        if await self._auth.is_admin(self._role, ns.tenant):
            return True
        grants = await self._auth.grants(ns)
        return grants is not None and PRODUCE in grants.anywhere(self._role)

    async def namespace_use(self, ns: Namespace) -> bool:
        if not self._role:
            return False
        if await self._auth.is_admin(self._role, ns.tenant):
            return True
        grants = await self._auth.grants(ns)
        return grants is not None and bool(grants.anywhere(self._role) & {PRODUCE, CONSUME})

    async def cluster(self) -> bool:
        return self._role in self._auth.superusers

    async def tenant_admin(self, ns: Namespace) -> bool:
        return bool(self._role) and await self._auth.is_admin(self._role, ns.tenant)

    def _may_subscribe(self, grants: NamespaceGrants, group: str) -> bool:
        """Pulsar's subscription permissions: a subscription that names roles is theirs."""
        roles = grants.subscriptions.get(self._auth.subscription_of(group))
        return not roles or self._role in roles
