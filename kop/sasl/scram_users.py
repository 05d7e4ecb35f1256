"""The SCRAM users every instance knows: read from the credential store (Pulsar) at
start and every `refresh_s`, so a user made at one instance signs in at any other
within that bound; changes made here apply here at once."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

from kop.sasl.mechanisms import SCRAM_SHA_256, SCRAM_SHA_512
from kop.sasl.scram import (
    MIN_ITERATIONS,
    ScramCredential,
    from_salted_password,
    password_matches,
)
from kop.security.errors import AuthenticationFailed
from kop.storage.credentials import CredentialStore
from kop.storage.refreshing import refresh_every

log = logging.getLogger(__name__)

Users = dict[str, dict[str, ScramCredential]]

# What a PLAIN password of a user who does not exist is hashed against: the cost of a
# user made with Kafka's defaults (SCRAM-SHA-512, 4,096 iterations), so the time of a
# refusal does not tell whether the user exists. It matches no password (its stored
# key is not of any salted password's making, and the answer is ignored).
_DECOY = from_salted_password(SCRAM_SHA_512, bytes(64), bytes(32), MIN_ITERATIONS)


class ScramUsers:
    def __init__(self, store: CredentialStore, refresh_s: float = 5.0) -> None:
        self._store = store
        self._refresh_s = refresh_s
        self._users: Users = {}

    async def refresh(self) -> None:
        users: Users = {}
        for (user, mechanism), text in (await self._store.load()).items():
            cred = _decode(user, text)
            if cred is not None:
                users.setdefault(user, {})[mechanism] = cred
        self._users = users

    async def run(self) -> None:
        await refresh_every(self.refresh, self._refresh_s, "SCRAM users")

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def check_password(self, user: str, password: str) -> str:
        """A PLAIN password against the user's SCRAM credential: the role, or refused."""
        for mechanism in (SCRAM_SHA_512, SCRAM_SHA_256):
            cred = self.lookup(user, mechanism)
            if cred is not None:
                if password_matches(mechanism, cred, password):
                    return user
                break
        else:
            password_matches(SCRAM_SHA_512, _DECOY, password)  # as long as a real refusal
        raise AuthenticationFailed(f"PLAIN password of {user!r} refused")

    def describe(self, users: list[str] | None) -> dict[str, dict[str, int]]:
        """user -> mechanism -> iterations, for the users asked (None: all) that exist."""
        names = sorted(self._users) if users is None else users
        return {
            u: {m: c.iterations for m, c in self._users[u].items()}
            for u in names
            if self._users.get(u)
        }

    async def upsert(self, user: str, mechanism: str, cred: ScramCredential) -> None:
        await self._store.save((user, mechanism), _encode(cred))
        self._users.setdefault(user, {})[mechanism] = cred

    async def remove(self, user: str, mechanism: str) -> bool:
        """False: the user had no credential of that mechanism (as the store has it now:
        another instance may have made or removed it)."""
        if (user, mechanism) not in await self._store.load():
            return False
        await self._store.delete((user, mechanism))
        mine = self._users.get(user, {})
        mine.pop(mechanism, None)
        if not mine:
            self._users.pop(user, None)
        return True


def _encode(c: ScramCredential) -> str:
    return json.dumps({"salt": _b64(c.salt), "stored_key": _b64(c.stored_key),
                       "server_key": _b64(c.server_key), "iterations": c.iterations},
                      separators=(",", ":"))  # fmt: skip


def _decode(user: str, text: str) -> ScramCredential | None:
    try:
        raw: dict[str, Any] = json.loads(text)
        salt, stored, server = (
            base64.b64decode(raw[k]) for k in ("salt", "stored_key", "server_key")
        )
        return ScramCredential(salt, stored, server, int(raw["iterations"]))
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("SCRAM record of %r is malformed, ignored: %s", user, exc)
        return None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
