"""The KIP-848 consumer groups of the offsets partitions this instance coordinates,
as a pure state machine: a heartbeat is computed on a working copy of its group
(`heartbeat`), which the caller persists and then installs (`install`); the session
and rebalance timeouts come due by `next_deadline` and are fenced the same way
(`due` names them, `fenced` computes the copy).

No I/O and no clock: the caller passes the time, as for the classic coordinator; the
members' timeouts are kept by member_timers.py.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

from kop.groups.consumer.assignors import ASSIGNORS
from kop.groups.consumer.group import ConsumerGroup
from kop.groups.consumer.heartbeat import Rules, beat, fence, leave
from kop.groups.consumer.member import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerMember,
)
from kop.groups.consumer.member_timers import Due, MemberTimers
from kop.groups.consumer.requests import Answer, Heartbeat, Resolved, validate
from kop.groups.tenant_keys import TenantKeyed
from kop.protocol.errors import ErrorCode, KafkaError


@dataclass(frozen=True, slots=True)
class ConsumerSettings:
    """Kafka's group.consumer.* broker settings kop honours."""

    session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    max_size: int = 1000  # group.consumer.max.size
    assignors: tuple[str, ...] = tuple(ASSIGNORS)  # group.consumer.assignors
    refresh_ms: int = 10_000  # how often a group's subscribed topics are looked up again
    default_tenant: str = ""
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy

    @property
    def upgrades(self) -> bool:
        """A classic group with members may become a consumer group online."""
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrades(self) -> bool:
        """A consumer group whose last consumer-protocol member leaves becomes classic."""
        return self.migration_policy in ("downgrade", "bidirectional")


def new_member_id() -> str:
    """What Kafka's Uuid.randomUuid().toString() looks like (v0 clients let the
    coordinator choose)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ConsumerCoordinator:
    def __init__(
        self,
        settings: ConsumerSettings | None = None,
        session_ms: Callable[[str], int] | None = None,
    ) -> None:
        self.settings = settings or ConsumerSettings()
        # a group's session timeout: its consumer.session.timeout.ms, or the broker's
        self.session_ms = session_ms or (lambda _group: self.settings.session_timeout_ms)
        self.groups: TenantKeyed[ConsumerGroup] = TenantKeyed(self.settings.default_tenant)
        self.timers = MemberTimers(self._session_of)
        self._refreshed: dict[str, int] = {}  # group -> next metadata refresh

    @property
    def rules(self) -> Rules:
        return Rules(self.settings.max_size, self.settings.assignors)

    # -- heartbeats --------------------------------------------------------------------

    def needs_refresh(self, hb: Heartbeat, now_ms: int) -> bool:
        """Whether the group's topics must be looked up again before this heartbeat: a
        new group or member, a changed subscription, or the refresh interval passed."""
        g = self.groups.get(hb.group_id)
        if g is None or hb.member_epoch == JOIN_EPOCH:
            return True
        if hb.topics is not None or hb.regex is not None:
            return True
        return now_ms >= self._refreshed.get(hb.group_id, 0)

    def subscriptions(self, group_id: str, hb: Heartbeat) -> tuple[set[str], set[str]]:
        """The names and regexes to resolve: the group's and this heartbeat's."""
        names: set[str] = set(hb.topics or ())
        regexes: set[str] = {hb.regex} if hb.regex else set()
        g = self.groups.get(group_id)
        for m in g.members.values() if g is not None else ():
            names.update(m.topics)
            if m.regex:
                regexes.add(m.regex)
        return names, regexes

    def heartbeat(
        self,
        hb: Heartbeat,
        resolved: Resolved | None,
        now_ms: int,
        base: ConsumerGroup | None = None,
    ) -> tuple[ConsumerGroup, Answer]:
        """The group as this heartbeat leaves it (a copy, not installed) and its
        answer; KafkaError for a refused heartbeat. `base`: a classic group being
        upgraded, as a consumer group (kop/groups/consumer/migration.py)."""
        validate(hb, self.settings.assignors)
        current = base if base is not None else self.groups.get(hb.group_id)
        if current is None and hb.member_epoch != JOIN_EPOCH:
            raise KafkaError(ErrorCode.group_id_not_found, f"Group {hb.group_id} not found.")
        g = current.copy() if current is not None else ConsumerGroup(hb.group_id, state_ms=now_ms)
        if hb.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return g, leave(g, hb)
        if not hb.member_id:
            hb = replace(hb, member_id=new_member_id())
        answer = beat(g, hb, resolved, self.rules)
        if resolved is not None:
            self._refreshed[hb.group_id] = now_ms + self.settings.refresh_ms
        return g, answer

    def install(self, g: ConsumerGroup, now_ms: int, beating: str | None = None) -> None:
        """`g` persisted: it is the group now. `beating`: the member whose heartbeat
        made it (its session starts again)."""
        old = self.groups.get(g.group_id)
        if old is None or old.members.keys() != g.members.keys():
            g.state_ms = now_ms
        self.groups[g.group_id] = g
        self.timers.installed(g, now_ms, beating)

    def _session_of(self, group_id: str, m: ConsumerMember) -> int:
        """A classic member's session is the one its JoinGroup asked for."""
        if m.classic is not None:
            return m.classic.session_timeout_ms
        return self.session_ms(group_id)

    # -- timeouts ----------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def due(self, now_ms: int) -> list[Due]:
        return self.timers.due(now_ms)

    def fenced(self, due: Due) -> ConsumerGroup | None:
        """The group without the member `due` names (a copy), or None if it is gone."""
        g = self.groups.get(due.group_id)
        if g is None or due.member_id not in g.members:
            self.timers.drop(due.group_id, due.member_id)
            return None
        out = g.copy()
        fence(out, due.member_id)
        return out

    def retry_later(self, due: Due, now_ms: int, after_ms: int = 1_000) -> None:
        """A fencing that could not be persisted is tried again a little later."""
        self.timers.retry_later(due, now_ms + after_ms)

    # -- load, unload, delete ----------------------------------------------------------

    def restore(self, g: ConsumerGroup, now_ms: int) -> None:
        """A group read back: its members' sessions start now."""
        self.groups[g.group_id] = g
        self.timers.restored(g, now_ms)

    def forget(self, group_id: str) -> None:
        self.groups.pop(group_id, None)
        self._refreshed.pop(group_id, None)
        self.timers.forget(group_id)
