"""SCRAM credentials as properties of kop's system namespace (`kop-scram:<user>`),
through Pulsar's admin API: every instance reads the same, nothing is kept on disk,
and only the salted keys are stored (never a password)."""

from __future__ import annotations

import urllib.parse

from kop.pulsar.permissions import Request
from kop.storage.naming import Namespace
from kop.storage.types import AdminError

_PREFIX = "kop-scram:"


class PulsarCredentials:
    def __init__(self, request: Request, ns: Namespace) -> None:
        self._request = request
        self._path = f"namespaces/{ns.path}"

    async def load(self) -> dict[str, str]:
        found = await self._request("GET", f"{self._path}/properties", ok_missing=True) or {}
        return {k[len(_PREFIX) :]: str(v) for k, v in found.items() if k.startswith(_PREFIX)}

    async def save(self, user: str, record: str) -> None:
        await self._request("PUT", f"{self._path}/properties", {_PREFIX + user: record})

    async def delete(self, user: str) -> None:
        key = urllib.parse.quote(_PREFIX + user, safe="")
        try:
            await self._request("DELETE", f"{self._path}/property/{key}")
        except AdminError as exc:
            if exc.status != 404:
                raise
