"""Who owns a partition (or an offsets partition, and with it its groups): the
rendezvous winner among the live instances, as this instance sees them now.

Every instance computes the same answer from the same view. While views differ
(for at most a TTL after a change), two instances may both believe they own a
partition; Pulsar's fence on the partition's writer makes the loser's writes
fail, so the view decides only who tries, never who succeeds.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from kop.cluster import rendezvous
from kop.cluster.member import Member


class View(Protocol):
    """The live instances (Membership, or one instance alone)."""

    version: int

    def live(self) -> list[Member]: ...

    async def changed(self, version: int) -> int: ...


class Solo:
    """One instance that is always the only one (no membership topic)."""

    def __init__(self, me: Member) -> None:
        self.me = me
        self.version = 0

    def live(self) -> list[Member]:
        return [self.me]

    async def changed(self, version: int) -> int:
        await asyncio.get_running_loop().create_future()  # never changes
        return version


REMEMBERED_OWNERS = 100_000  # keys whose owner is kept; past it, the memory starts over


class Ownership:
    def __init__(self, view: View, me: Member) -> None:
        self.view = view
        self.me = me
        self._seen = -1
        self._members: dict[int, Member] = {}
        # each key's owner among `_members`, as computed (cleared when they change): a
        # fetch of 1,000 partitions asks for each of them, twice
        self._owners: dict[str, int | None] = {}

    def brokers(self) -> list[Member]:
        """The live instances, as Metadata lists brokers."""
        return list(self._live().values())

    def instances(self) -> set[str]:
        """The live instances' ids (what a connection proves it is: sasl.peers)."""
        return {m.instance for m in self._live().values()}

    def owner(self, key: str) -> Member | None:
        """The instance that owns `key` (None: no instance is alive)."""
        members = self._live()
        try:
            node = self._owners[key]
        except KeyError:
            if len(self._owners) >= REMEMBERED_OWNERS:
                self._owners.clear()
            node = self._owners[key] = rendezvous.owner(key, members)
        return None if node is None else members[node]

    def mine(self, key: str) -> bool:
        found = self.owner(key)
        return found is not None and found.node_id == self.me.node_id

    def member(self, node_id: int) -> Member | None:
        return self._live().get(node_id)

    async def changed(self, version: int) -> int:
        return await self.view.changed(version)

    @property
    def version(self) -> int:
        return self.view.version

    def _live(self) -> dict[int, Member]:
        if self._seen != self.view.version:
            self._members = {m.node_id: m for m in self.view.live()}
            self._seen = self.view.version
            self._owners = {}
        return self._members
