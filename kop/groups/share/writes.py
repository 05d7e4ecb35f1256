"""How a share group's changes reach the offsets topic (kop.groups.share.stored, D34):
the records that turn the group as it was into the group as it is, in one entry. A
change a client asked for is undone in memory when its write fails, and the client told
what the failure means; a change kop made itself (ended sessions) is logged instead, as
those members come back when the group is read again and their sessions end again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from kop.groups.share.coordinator import ShareCoordinator
from kop.groups.share.group import ShareGroup
from kop.groups.share.stored import ShareSnapshot, changes, restored, tombstones
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.types import OutgoingMessage, StorageError

log = logging.getLogger("kop.groups.share.service")  # beside the service's own lines

Failed = Callable[[str, StorageError], ErrorCode]


class ShareStore(Protocol):
    """Where a share group's records go (OffsetsStore)."""

    async def store_share_group(self, group: str, records: list[OutgoingMessage]) -> None: ...


class Unstored:
    """Nowhere: groups kept in memory only (tests of the rules alone)."""

    async def store_share_group(self, group: str, records: list[OutgoingMessage]) -> None:
        return None


def retriable(_group: str, _exc: StorageError) -> ErrorCode:
    return ErrorCode.request_timed_out


class ShareWrites:
    def __init__(
        self, coordinator: ShareCoordinator, clock: Callable[[], int], store: ShareStore,
        failed: Failed,
    ) -> None:  # fmt: skip
        self._coordinator = coordinator
        self._clock = clock
        self._store = store
        self._failed = failed  # what a failed write means for the client

    async def asked(self, group_id: str, before: ShareSnapshot | None) -> None:
        """The group's change since `before`, written; if the write fails, the group is
        as it was before and KafkaError says what the failure means."""
        try:
            await self._write(group_id, before)
        except StorageError as exc:
            log.warning("share group %s not persisted: %s", group_id, exc)
            self._revert(group_id, before)
            raise KafkaError(self._failed(group_id, exc), str(exc)) from None

    async def ended(self, group_id: str, before: ShareSnapshot | None) -> None:
        """Sessions kop ended since `before`, written, or the failure logged."""
        try:
            await self._write(group_id, before)
        except StorageError as exc:
            log.warning("share group %s's ended sessions not persisted: %s", group_id, exc)

    async def deleted(self, g: ShareGroup) -> ErrorCode:
        """The group's tombstones written: NONE, or what the failure means."""
        try:
            await self._store.store_share_group(g.group_id, tombstones(g))
        except StorageError as exc:
            log.warning("deleting share group %s not persisted: %s", g.group_id, exc)
            return self._failed(g.group_id, exc)
        return ErrorCode.none

    async def _write(self, group_id: str, before: ShareSnapshot | None) -> None:
        g = self._coordinator.groups.get(group_id)
        if g is not None:
            await self._store.store_share_group(group_id, changes(before, g))

    def _revert(self, group_id: str, before: ShareSnapshot | None) -> None:
        c = self._coordinator
        if before is None:
            c.forget(group_id)
            return
        now = c.groups.get(group_id)
        session = c.session_ms(group_id)

        def deadline(member: str) -> int:
            kept = now.members.get(member) if now is not None else None
            return kept.deadline_ms if kept is not None else self._clock() + session

        c.groups[group_id] = restored(group_id, before, deadline)
