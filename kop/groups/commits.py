"""OffsetCommit and TxnOffsetCommit of a group this instance coordinates: whether the
committer may commit (a classic member of the current generation, a KIP-848 member at
its epoch, a transactional producer outside the group), then the offsets persisted,
or kept aside until the producer's transaction ends (kop/groups/txn_offsets.py). A
commit is answered only after Pulsar persisted it."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable

from kop.groups.consumer.offset_checks import commit_allowed
from kop.groups.consumer.service import ConsumerGroups
from kop.groups.coordinator import Coordinator
from kop.groups.driver import Driver
from kop.groups.full_warning import FullWarning
from kop.groups.offsets import Offsets
from kop.groups.txn_offsets import PendingOffsets
from kop.groups.types import CommittedOffset, TopicPartition
from kop.protocol.errors import ErrorCode
from kop.storage.types import StorageError

log = logging.getLogger("kop.groups.service")  # where these lines always went


class OffsetCommits:
    def __init__(
        self,
        coordinator: Coordinator,
        driver: Driver,
        consumer: ConsumerGroups,
        offsets: Offsets,
        pending: PendingOffsets,
        full: FullWarning,
        check: Callable[[str], None],
        failed: Callable[[str, StorageError], ErrorCode],
    ) -> None:
        self._coordinator = coordinator
        self._driver = driver
        self._consumer = consumer
        self._offsets = offsets
        self._pending = pending
        self._full = full
        self._check = check
        self._failed = failed
        self.on_commit: Callable[[float], None] = lambda _seconds: None  # metrics hook

    async def commit(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        offsets: dict[TopicPartition, CommittedOffset],
        retention_ms: int | None = None,
        producer: tuple[int, int] | None = None,
    ) -> ErrorCode:
        """One code for the whole request: Kafka stores a commit's offsets together.
        `retention_ms` (OffsetCommit v2-4) makes them expire that long after now. With
        `producer` (TxnOffsetCommit's id and epoch) they are kept aside until its
        transaction ends, and a generation of -1 without a member is not checked (a
        producer outside the group), as in Kafka."""
        self._check(group_id)
        if producer is not None and self._pending.fenced(*producer):
            return ErrorCode.invalid_producer_epoch
        now = self._driver.clock()
        code = self._allowed(group_id, generation, member_id, instance_id, producer, offsets)
        self._full.tell(group_id, code)
        if code is not ErrorCode.none or not offsets:
            return code
        expire = now + retention_ms if retention_ms is not None else None
        stamped = {
            tp: dataclasses.replace(o, commit_ms=now, expire_ms=expire) for tp, o in offsets.items()
        }
        started = time.monotonic()
        try:
            if producer is None:
                await self._offsets.commit(group_id, stamped)
            else:
                await self._pending.add(group_id, producer[0], stamped)
        except StorageError as exc:
            log.warning("commit of %s not persisted: %s", group_id, exc)
            return self._failed(group_id, exc)
        self.on_commit(time.monotonic() - started)
        return ErrorCode.none

    def _allowed(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        producer: tuple[int, int] | None,
        partitions: Iterable[TopicPartition],
    ) -> ErrorCode:
        consumer = commit_allowed(self._consumer.get(group_id), member_id, generation, partitions)
        if consumer is not None:
            return consumer  # a KIP-848 group: the generation is the member epoch
        if producer is None or generation >= 0 or member_id:
            return self._driver.now(
                lambda now: self._coordinator.commit_allowed(
                    group_id, generation, member_id, instance_id, now
                )
            )
        # a transactional producer outside the group: it still needs room
        return self._driver.now(lambda now: self._coordinator.hold(group_id, now))
