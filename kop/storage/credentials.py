"""Where SCRAM credentials live: in Pulsar, never in a local file (docs/security.md).
Opaque text per user here; kop.security.credentials gives it meaning."""

from __future__ import annotations

from typing import Protocol


class CredentialStore(Protocol):
    async def load(self) -> dict[str, str]:
        """Every user's record."""
        ...

    async def save(self, user: str, record: str) -> None: ...

    async def delete(self, user: str) -> None:
        """Nothing happens for a user without a record."""
        ...
