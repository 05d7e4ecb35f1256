"""Records kept as properties of kop's system namespace, under one prefix each
(`kop-scram:`, `kop-quota:`), through Pulsar's admin API: every instance reads the
same, nothing is kept on disk, and setting one property leaves the others as they
are."""

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
