"""Kafka's online migration between the group protocols at work on the event loop
(the conversions: migration.py). An upgrade takes the classic group from its
coordinator first (its parked joins and syncs are told to rejoin) and gives it back if
the upgrade is refused or cannot be persisted; a downgrade writes the consumer group's
tombstones and the classic group's record in one entry, then hands the group to the
classic coordinator, which starts a rebalance. Both run under the group's lock."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from kop.groups.consumer.coordinator import ConsumerCoordinator
from kop.groups.consumer.group import ConsumerGroup
from kop.groups.consumer.member import JOIN_EPOCH
from kop.groups.consumer.migration import (
    downgradable,
    from_classic,
    not_a_consumer_group,
    to_classic,
    upgrade_topics,
)
from kop.groups.consumer.requests import Answer, Heartbeat, Resolved
from kop.groups.offsets_store import OffsetsStore
from kop.groups.types import GroupMetadata
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.types import StorageError

log = logging.getLogger("kop.groups.consumer.service")

# (names, regexes) -> the group's topics as they exist now
Resolver = Callable[[set[str], set[str]], Awaitable[Resolved]]
# (the group before, the group after, whether it replaces an empty classic group)
Persist = Callable[[ConsumerGroup | None, ConsumerGroup, bool], Awaitable[None]]


class ClassicGroups:
    """What the consumer groups need of the classic coordinator: whether a group id is
    a classic group with members; to forget an empty one that becomes a consumer group
    (Kafka converts an empty group either way); to hand a live one over for an online
    upgrade (its parked joins and syncs answered REBALANCE_IN_PROGRESS), to take it
    back when that fails, and to adopt a consumer group that downgrades."""

    def __init__(
        self,
        has_members: Callable[[str], bool | None],
        forget: Callable[[str], None],
        metadata: Callable[[str], GroupMetadata | None] = lambda _g: None,
        hand_over: Callable[[str], GroupMetadata | None] = lambda _g: None,
        adopt: Callable[[GroupMetadata, bool], None] = lambda _m, _r: None,
        max_size: int = 2**31 - 1,
    ) -> None:
        self.has_members = has_members  # None: no classic group of that id
        self.forget = forget
        self.metadata = metadata
        self.hand_over = hand_over
        self.adopt = adopt  # (group, rebalance: whether its members must rejoin)
        self.max_size = max_size  # group.classic.max.size (a downgrade fits in it)


class Migrating:
    def __init__(
        self,
        coordinator: ConsumerCoordinator,
        store: OffsetsStore,
        classic: ClassicGroups,
        clock: Callable[[], int],
        failed: Callable[[str, StorageError], ErrorCode],
        persist: Persist,
    ) -> None:
        self.coordinator = coordinator
        self._store = store
        self._classic = classic
        self._clock = clock
        self._failed = failed
        self._persist = persist

    async def upgrade(self, hb: Heartbeat, resolve: Resolver) -> Answer:
        """A member of the consumer protocol joins a classic group with members: the
        group becomes a KIP-848 group in which they stay, speaking the classic protocol
        (Kafka's online upgrade, kop/groups/consumer/migration.py). The classic group is
        handed over first (its parked joins and syncs are told to rejoin), and taken back
        if the upgrade is refused or cannot be persisted."""
        meta = self._classic.metadata(hb.group_id)
        if meta is None or hb.member_epoch != JOIN_EPOCH:
            raise not_a_consumer_group(hb.group_id)
        if not self.coordinator.settings.upgrades:
            raise KafkaError(
                ErrorCode.group_id_not_found,
                f"Cannot upgrade classic group {hb.group_id} to consumer group because online "
                "upgrade is disabled.",
            )
        names = upgrade_topics(meta, self.coordinator.settings.max_size)
        meta = self._classic.hand_over(hb.group_id)
        assert meta is not None
        try:
            now = self._clock()
            regexes = {hb.regex} if hb.regex else set()
            resolved = await resolve(names | set(hb.topics or ()), regexes)
            base = from_classic(meta, resolved.topics, now)
            g, answer = self.coordinator.heartbeat(hb, resolved, now, base=base)
            await self._persist(None, g, True)
        except BaseException:
            self._classic.adopt(meta, False)
            raise
        log.info("classic group %s upgraded to the consumer protocol", hb.group_id)
        self.coordinator.install(g, self._clock(), answer.member_id)
        return answer

    async def downgraded(
        self, old: ConsumerGroup, leaving: str, replaced_in: ConsumerGroup | None = None
    ) -> bool:
        """The last member of the consumer protocol left and every other member speaks
        the classic protocol: the group becomes a classic group again and its members
        rejoin (Kafka's online downgrade). `replaced_in`: the group in which a classic
        static member took that last member's place (its join made it): the classic
        group is that one, as it stands, without a rebalance. False when it stays a
        consumer group (also whenever the policy forbids a downgrade)."""
        if not self.coordinator.settings.downgrades:
            return False
        if not downgradable(old, leaving, self._classic.max_size, replaced_in is not None):
            return False
        now = self._clock()
        meta = (
            to_classic(old, leaving, now)
            if replaced_in is None
            else to_classic(replaced_in, None, now)
        )
        try:
            await self._store.store_classic_replacing(old, meta)
        except StorageError as exc:
            raise KafkaError(self._failed(old.group_id, exc), str(exc)) from None
        self.coordinator.forget(old.group_id)
        self._classic.adopt(meta, replaced_in is None)
        log.info("consumer group %s downgraded to the classic protocol", old.group_id)
        return True
