"""Classic and KIP-848 consumer groups share one group id space and one set of bounds:
what each kind of coordinator asks about the other."""

from __future__ import annotations

from kop.groups.consumer.coordinator import ConsumerCoordinator
from kop.groups.coordinator import Coordinator


class GroupKinds:
    def __init__(self, classic: Coordinator, consumer: ConsumerCoordinator) -> None:
        self._classic = classic
        self._consumer = consumer

    def consumer_in_use(self, group_id: str) -> bool:
        """A KIP-848 group with members keeps all its offsets."""
        g = self._consumer.groups.get(group_id)
        return g is not None and bool(g.members)

    def classic_members(self, group_id: str) -> bool | None:
        """Whether the classic group of this id has members (None: there is none)."""
        g = self._classic.groups.get(group_id)
        return None if g is None else bool(g.members or g.pending)

    def room(self, group_id: str) -> bool:
        """Room for one more group: classic and consumer groups count together towards
        `max_groups` and a tenant's `max_groups_per_tenant`."""
        limits = self._classic.limits
        classic, consumer = self._classic.groups, self._consumer.groups
        if len(classic) + len(consumer) >= limits.max_groups:
            return False
        held = classic.of_tenant(group_id) + consumer.of_tenant(group_id)
        return held < limits.max_groups_per_tenant
