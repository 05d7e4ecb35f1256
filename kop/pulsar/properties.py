"""Records kept as namespace properties, under one prefix each (`kop-scram:`,
`kop-quota:` in kop's system namespace; `kop-group-config:` in each group's own),
through Pulsar's admin API: every instance reads the same, nothing is kept on disk,
and setting one property leaves the others as they are."""

from __future__ import annotations

import urllib.parse

from kop.pulsar.permissions import Request
from kop.storage.naming import Namespace
from kop.storage.types import AdminError


class NamespaceProperties:
    def __init__(self, request: Request, ns: Namespace, prefix: str) -> None:
        self._request = request
        self._path = f"namespaces/{ns.path}"
        self._prefix = prefix

    async def load(self) -> dict[str, str]:
        """Every record of this prefix, by its name without the prefix."""
        found = await self._request("GET", f"{self._path}/properties", ok_missing=True) or {}
        p = self._prefix
        return {name[len(p) :]: str(value) for name, value in found.items() if name.startswith(p)}

    async def save(self, name: str, record: str) -> None:
        await self._request("PUT", f"{self._path}/properties", {self._prefix + name: record})

    async def delete(self, name: str) -> None:
        quoted = urllib.parse.quote(self._prefix + name, safe="")
        try:
            await self._request("DELETE", f"{self._path}/property/{quoted}")
        except AdminError as exc:
            if exc.status != 404:
                raise


class GroupConfigProperties:
    """Per-group configs as properties of each group's own namespace (prefix
    `kop-group-config:`), not of the system namespace: a tenant's records never grow
    another tenant's namespace policies."""

    PREFIX = "kop-group-config:"

    def __init__(self, request: Request) -> None:
        self._request = request

    def _of(self, ns: Namespace) -> NamespaceProperties:
        return NamespaceProperties(self._request, ns, self.PREFIX)

    async def load(self, ns: Namespace) -> dict[str, str]:
        return await self._of(ns).load()

    async def save(self, ns: Namespace, group: str, record: str) -> None:
        await self._of(ns).save(group, record)

    async def delete(self, ns: Namespace, group: str) -> None:
        await self._of(ns).delete(group)
