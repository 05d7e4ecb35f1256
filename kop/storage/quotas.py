"""Where client quotas live: in Pulsar, one opaque record per quota entity, so that
changing one entity's quotas never rewrites another's; kop.quotas.book gives the
records meaning."""

from __future__ import annotations

from typing import Protocol


class QuotaStore(Protocol):
    async def load(self) -> dict[str, str]:
        """Every record, by entity name."""
        ...

    async def save(self, name: str, record: str) -> None: ...

    async def delete(self, name: str) -> None:
        """Nothing happens for a name without a record."""
        ...
