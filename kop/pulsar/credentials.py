"""SCRAM credentials as properties of kop's system namespace
(`kop-scram:<mechanism>:<user>`): only the salted keys are stored, never a password."""

from __future__ import annotations

from kop.pulsar.permissions import Request
from kop.pulsar.properties import NamespaceProperties
from kop.storage.credentials import Key
from kop.storage.naming import Namespace


class PulsarCredentials:
    def __init__(self, request: Request, ns: Namespace) -> None:
        self._properties = NamespaceProperties(request, ns, "kop-scram:")

    async def load(self) -> dict[Key, str]:
        out: dict[Key, str] = {}
        for name, value in (await self._properties.load()).items():
            mechanism, sep, user = name.partition(":")
            if sep:
                out[(user, mechanism)] = value
        return out

    async def save(self, key: Key, record: str) -> None:
        await self._properties.save(_name(key), record)

    async def delete(self, key: Key) -> None:
        await self._properties.delete(_name(key))


def _name(key: Key) -> str:
    user, mechanism = key
    return f"{mechanism}:{user}"
