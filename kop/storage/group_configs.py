"""Where per-group configs live: in Pulsar, in the properties of the namespace the
group belongs to (one record per group that has overrides), so a tenant's configs sit
in its own namespace and every instance reads the same; kop.groups.group_config_book
gives the records meaning."""

from __future__ import annotations

from typing import Protocol

from kop.storage.naming import Namespace


class GroupConfigStore(Protocol):
    async def load(self, ns: Namespace) -> dict[str, str]:
        """Every group's record in `ns`, by group id (none for a namespace not there)."""
        ...

    async def save(self, ns: Namespace, group: str, record: str) -> None: ...

    async def delete(self, ns: Namespace, group: str) -> None:
        """Nothing happens for a group without a record."""
        ...
