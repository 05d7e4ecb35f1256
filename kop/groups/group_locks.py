"""One heartbeat per group at a time: a lock per group id, kept only while someone
holds or awaits it (a group id a client made up leaves nothing behind)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class GroupLocks:
    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @contextlib.asynccontextmanager
    async def exclusive(self, group_id: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(group_id, asyncio.Lock())
        self._users[group_id] = self._users.get(group_id, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[group_id] -= 1
            if not self._users[group_id]:
                del self._users[group_id], self._locks[group_id]
