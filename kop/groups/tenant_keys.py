"""Keys of a tenant's things (group ids, transactional ids), counted by tenant as they
come and go.

`max_groups` was one pool for every tenant an instance serves, and transactional ids
had none: a role that may only consume could fill the groups with standalone commits
under made-up ids, and any producer could add transactional ids without end, so every
other tenant's new groups were refused or the coordinator's memory grew (issue 33).
Counting each tenant's keys as they are added and dropped makes a per-tenant check
constant time, so a tenant at its cap sending new ids costs no scan of the pool.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, TypeVar

from kop.groups.group import Group
from kop.groups.scope import SCOPED

V = TypeVar("V")


def tenant_of(key: str, default_tenant: str) -> str:
    """The tenant of a key: `//tenant/namespace/id`, or a bare id of the default
    namespace (kop.groups.scope: transactional ids are keyed as group ids are)."""
    if key.startswith(SCOPED):
        return key[len(SCOPED) :].split("/", 1)[0]
    return default_tenant


class TenantKeyed(dict[str, V]):
    """A dict keyed by tenant-scoped keys that knows how many each tenant holds. Every
    way a key enters or leaves goes through the overrides below."""

    def __init__(self, default_tenant: str = "") -> None:
        super().__init__()
        self._default_tenant = default_tenant
        self._by_tenant: Counter[str] = Counter()

    def of_tenant(self, key: str) -> int:
        """How many keys the tenant of `key` holds here."""
        return self._by_tenant[tenant_of(key, self._default_tenant)]

    def __setitem__(self, key: str, value: V) -> None:
        if key not in self:
            self._by_tenant[tenant_of(key, self._default_tenant)] += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._gone(key)

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            self._gone(key)
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, V]:
        key, value = super().popitem()
        self._gone(key)
        return key, value

    def setdefault(self, key: str, default: V) -> V:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: V) -> None:
        items: Iterable[tuple[str, V]] = dict(*args, **kwargs).items()
        for key, value in items:
            self[key] = value

    def clear(self) -> None:
        super().clear()
        self._by_tenant.clear()

    def _gone(self, key: str) -> None:
        tenant = tenant_of(key, self._default_tenant)
        self._by_tenant[tenant] -= 1
        if self._by_tenant[tenant] <= 0:
            del self._by_tenant[tenant]


HeldGroups = TenantKeyed[Group]  # the groups one coordinator holds
