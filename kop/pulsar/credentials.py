"""SCRAM credentials as properties of kop's system namespace
(`kop-scram:<mechanism>:<user>`), through Pulsar's admin API: every instance reads the
same, nothing is kept on disk, and only the salted keys are stored (never a password).
Setting one property leaves the others as they are."""

from __future__ import annotations

import urllib.parse

from kop.pulsar.permissions import Request
from kop.storage.credentials import Key
from kop.storage.naming import Namespace
from kop.storage.types import AdminError

_PREFIX = "kop-scram:"


class PulsarCredentials:
    def __init__(self, request: Request, ns: Namespace) -> None:
        self._request = request
        self._path = f"namespaces/{ns.path}"

    async def load(self) -> dict[Key, str]:
        found = await self._request("GET", f"{self._path}/properties", ok_missing=True) or {}
        out: dict[Key, str] = {}
        for name, value in found.items():
            mechanism, sep, user = name[len(_PREFIX) :].partition(":")
            if name.startswith(_PREFIX) and sep:
                out[(user, mechanism)] = str(value)
        return out

    async def save(self, key: Key, record: str) -> None:
        await self._request("PUT", f"{self._path}/properties", {_name(key): record})

    async def delete(self, key: Key) -> None:
        quoted = urllib.parse.quote(_name(key), safe="")
        try:
            await self._request("DELETE", f"{self._path}/property/{quoted}")
        except AdminError as exc:
            if exc.status != 404:
                raise


def _name(key: Key) -> str:
    user, mechanism = key
    return f"{_PREFIX}{mechanism}:{user}"
