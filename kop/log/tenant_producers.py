"""Idempotent producers remembered across one tenant's partitions on this instance, at
most `max_per_tenant` (issue 33).

Each partition already forgets its least recently used producer past `max_producers`,
and a partition belongs to one tenant, so one tenant's producers never push out
another's. But a tenant that writes one batch under each of many made-up producer ids
to each of its many partitions held `partitions x max_producers` states in kop's
memory, which every tenant shares. KIP-936 (Kafka's proposal for the same flood)
throttles a principal's unseen producer ids; kop instead forgets the tenant's least
recently used producer, on whichever of its partitions: no client of a well-behaved
tenant sees a new error, and the flood costs only the flooding tenant (a forgotten
producer's retry is no longer recognised, as past `max_producers`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Protocol


class Forgetting(Protocol):
    """A partition's producer states, as the share needs them."""

    def forget(self, pid: int) -> None: ...


class TenantProducers:
    def __init__(self, max_per_tenant: int) -> None:
        self._max = max_per_tenant
        self._held: dict[str, OrderedDict[tuple[int, int], Forgetting]] = {}

    def remember(self, tenant: str, states: Forgetting, pid: int) -> None:
        """The producer was used now; past the tenant's share, its least recently used
        producer elsewhere (or here) is forgotten."""
        lru = self._held.setdefault(tenant, OrderedDict())
        key = (id(states), pid)
        if key in lru:
            lru.move_to_end(key)
            return
        lru[key] = states
        while len(lru) > self._max:
            (_, victim_pid), victim = lru.popitem(last=False)
            victim.forget(victim_pid)

    def release(self, tenant: str, states: Forgetting, pids: list[int]) -> None:
        """These producers are no longer remembered by `states` (forgotten there, or
        the partition closed)."""
        lru = self._held.get(tenant)
        if lru is None:
            return
        for pid in pids:
            lru.pop((id(states), pid), None)
        if not lru:
            del self._held[tenant]

    def held(self, tenant: str) -> int:
        return len(self._held.get(tenant, ()))


def tenant_of(topic: str) -> str:
    """`persistent://tenant/namespace/name` -> `tenant`."""
    return topic.split("://", 1)[-1].split("/", 1)[0]
