"""Classic, KIP-848 consumer and KIP-932 share groups share one group id space and
one set of bounds: what each kind of coordinator asks about the others."""

from __future__ import annotations

from kop.groups.consumer.coordinator import ConsumerCoordinator
from kop.groups.coordinator import Coordinator
from kop.groups.share.coordinator import ShareCoordinator
from kop.protocol.errors import ErrorCode, KafkaError


class GroupKinds:
    def __init__(
        self, classic: Coordinator, consumer: ConsumerCoordinator, share: ShareCoordinator
    ) -> None:
        self._classic = classic
        self._consumer = consumer
        self._share = share

    def refuse_share(self, group_id: str) -> None:
        """A classic or consumer member names a share group's id: refused, as Kafka does."""
        if group_id in self._share.groups:
            raise KafkaError(
                ErrorCode.inconsistent_group_protocol, f"Group {group_id} is a share group."
            )

    def is_not_share(self, group_id: str) -> bool:
        """A classic or consumer group holds the id."""
        return group_id in self._classic.groups or group_id in self._consumer.groups

    def consumer_in_use(self, group_id: str) -> bool:
        """A KIP-848 group with members keeps all its offsets."""
        g = self._consumer.groups.get(group_id)
        return g is not None and bool(g.members)

    def classic_members(self, group_id: str) -> bool | None:
        """Whether the classic group of this id has members (None: there is none)."""
        g = self._classic.groups.get(group_id)
        return None if g is None else bool(g.members or g.pending)

    def room(self, group_id: str) -> bool:
        """Room for one more group: every kind counts towards `max_groups` and a
        tenant's `max_groups_per_tenant`."""
        limits = self._classic.limits
        kinds = (self._classic.groups, self._consumer.groups, self._share.groups)
        if sum(len(k) for k in kinds) >= limits.max_groups:
            return False
        return sum(k.of_tenant(group_id) for k in kinds) < limits.max_groups_per_tenant
