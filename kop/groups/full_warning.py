"""Why a new group was refused, for the operator: the client only learns that the
coordinator is unavailable (`max_groups` reached); the log says why, once a minute
at most."""

from __future__ import annotations

import logging
import time

from kop.groups.coordinator import Coordinator
from kop.protocol.errors import ErrorCode

log = logging.getLogger("kop.groups.service")  # where these lines always went

FULL_WARNING_INTERVAL_S = 60.0


class FullWarning:
    def __init__(self, coordinator: Coordinator) -> None:
        self._coordinator = coordinator
        self._told_at = -FULL_WARNING_INTERVAL_S

    def tell(self, group_id: str, code: ErrorCode) -> None:
        groups = self._coordinator.groups
        if code is not ErrorCode.coordinator_not_available or group_id in groups:
            return
        if time.monotonic() - self._told_at >= FULL_WARNING_INTERVAL_S:
            self._told_at = time.monotonic()
            limits = self._coordinator.limits
            log.warning(
                "new group %r refused (COORDINATOR_NOT_AVAILABLE): %d groups are held, "
                "%d of them its tenant's; max_groups=%d, max_groups_per_tenant=%d; room "
                "comes back as groups are deleted or expire",
                group_id, len(groups), groups.of_tenant(group_id), limits.max_groups,
                limits.max_groups_per_tenant,
            )  # fmt: skip
