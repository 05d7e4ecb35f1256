"""Where SCRAM credentials live: in Pulsar, never in a local file (docs/security.md).
One opaque record per (user, mechanism), so that changing one never rewrites
another (two instances altering one user's two mechanisms at once both hold);
kop.sasl.scram_users gives the records meaning."""

from __future__ import annotations

from typing import Protocol

Key = tuple[str, str]  # (user, mechanism)


class CredentialStore(Protocol):
    async def load(self) -> dict[Key, str]:
        """Every record."""
        ...

    async def save(self, key: Key, record: str) -> None: ...

    async def delete(self, key: Key) -> None:
        """Nothing happens for a key without a record."""
        ...
