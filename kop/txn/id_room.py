"""Room for transactional ids: a per-tenant cap, and Kafka's expiration of ids whose
last transaction finished long ago (issue 33).

Before, an id once used was held for good, in memory and in the state topic, and one
tenant could add ids without end. Kafka forgets an id in Empty, CompleteCommit or
CompleteAbort after `transactional.id.expiration.ms` (7 days) without a change,
looked for every `transaction.remove.expired.transaction.cleanup.interval.ms` (an
hour); kop does the same, and caps the ids each tenant holds on this instance, as
`max_groups_per_tenant` caps its groups.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

from kop.storage.types import StorageError
from kop.txn.state import TxnTable
from kop.txn.store import TxnStore

log = logging.getLogger("kop.txn.coordinator")  # where the coordinator's lines go

FULL_WARNING_INTERVAL_S = 60.0


@dataclass(frozen=True, slots=True)
class TxnLimits:
    """How many transactional ids a tenant may hold, and how long a finished one lives."""

    max_ids_per_tenant: int = 2**31 - 1  # kop's own (Kafka has no such bound)
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms (7 days)
    # transaction.remove.expired.transaction.cleanup.interval.ms (1 hour)
    cleanup_interval_ms: int = 3_600_000
    default_tenant: str = ""  # the tenant of the default namespace's (bare) ids


class IdRoom:
    def __init__(self, limits: TxnLimits) -> None:
        self.limits = limits
        self._next_cleanup_ms = 0
        self._told_full_at = -FULL_WARNING_INTERVAL_S

    def full(self, txn_id: str, tables: Iterable[TxnTable]) -> bool:
        """A new id of a tenant holding max_transactional_ids_per_tenant here is refused
        (COORDINATOR_NOT_AVAILABLE, retriable: ids expire), and the operator told why."""
        held = sum(tx.metas.of_tenant(txn_id) for tx in tables)
        if held < self.limits.max_ids_per_tenant:
            return False
        if time.monotonic() - self._told_full_at >= FULL_WARNING_INTERVAL_S:
            self._told_full_at = time.monotonic()
            log.warning(
                "new transactional id %r refused (COORDINATOR_NOT_AVAILABLE): its tenant "
                "holds %d, max_transactional_ids_per_tenant=%d; room comes back as ids "
                "expire (transactional_id_expiration_ms)",
                txn_id, held, self.limits.max_ids_per_tenant,
            )  # fmt: skip
        return True

    async def forget_idle(self, now_ms: int, tables: Iterable[TxnTable], store: TxnStore) -> None:
        """Once per cleanup interval, tombstone each expired id (pending meanwhile, so
        no request changes it under the write); one that fails to go stays and is
        tried next time."""
        if now_ms < self._next_cleanup_ms:
            return
        self._next_cleanup_ms = now_ms + self.limits.cleanup_interval_ms
        forgotten = 0
        for tx in list(tables):
            for txn_id in tx.idle_since(now_ms - self.limits.id_expiration_ms):
                tx.pending.add(txn_id)
                try:
                    await store.forget(txn_id)
                except StorageError as exc:
                    log.warning("expired transactional id %s not forgotten: %s", txn_id, exc)
                    continue
                finally:
                    tx.pending.discard(txn_id)
                tx.metas.pop(txn_id, None)
                forgotten += 1
        if forgotten:
            log.info("%d transactional ids expired (transactional_id_expiration_ms)", forgotten)
