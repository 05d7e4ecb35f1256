"""The fetch session cache of one kop instance (KIP-227; docs/decisions.md D25).

A full fetch (epoch 0) opens a session when there is room; later fetches name only
partitions that changed and are answered only with partitions that have something to
say. The slots and their eviction are Kafka's (`FetchSessionCacheShard`): a new session
takes a free slot, else the least recently used session's if that one has been idle
longer than `eviction_ms`, else the smallest session's if the new one has more
partitions and the smallest is older than `eviction_ms`. Every session is a consumer's
(kop has no followers, Kafka's privileged sessions).

Tenants share the cache, so it is kop's own rule that a session belongs to its `Owner`
(another client presenting its id is told there is no such session, and cannot close
it), that one principal holds at most `per_principal` sessions (at its share, a new one
competes under the same rules only with that principal's own), and that a session
holds at most as many partitions as one Fetch may name. Ids are drawn from the
operating system's randomness, never one in use or among the last retired.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kio.schema.fetch.v12.request import FetchPartition
from kio.schema.fetch.v12.response import PartitionData

from kop.api.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    NO_SESSION,
    Cached,
    Key,
    Owner,
    Session,
    next_epoch,
)
from kop.protocol.errors import ErrorCode

__all__ = ["NO_SESSION", "Owner", "Plan", "Session"]


@dataclass(frozen=True, slots=True)
class Refused:
    """The whole fetch is this error, with no partitions (Kafka's SessionErrorContext)."""

    error: ErrorCode


@dataclass(frozen=True, slots=True)
class Full:
    """A full fetch of `asked`; `open` if it asked for a session (epoch 0)."""

    asked: list[tuple[Key, FetchPartition]]
    open: bool


@dataclass(frozen=True, slots=True)
class Incremental:
    """A fetch of every partition of `session`, whose epoch must still be `epoch` when
    it is answered (a later request of the same session makes this one stale)."""

    session: Session
    epoch: int


Plan = Refused | Full | Incremental


def _random_id() -> int:
    return secrets.randbelow((1 << 31) - 1) + 1  # 1 .. 2**31-1: 0 is "no session"


class FetchSessions:
    """The sessions of this instance, by id; `_lru` orders them by last use, and each
    principal's own by the same order in `_mine`."""

    def __init__(
        self,
        slots: int,
        eviction_ms: int,
        per_principal: int,
        max_partitions: int,
        clock: Callable[[], int] = lambda: time.monotonic_ns() // 1_000_000,
        new_id: Callable[[], int] = _random_id,
    ) -> None:
        self.slots, self.eviction_ms = slots, eviction_ms
        self.per_principal, self.max_partitions = per_principal, max_partitions
        self._clock, self._new_id = clock, new_id
        self._lru: dict[int, Session] = {}  # least recently used first
        self._mine: dict[str, dict[int, Session]] = {}
        self._retired = _Recent(max(1, slots))
        self.evictions = 0
        self.partitions = 0  # cached partitions, each session's as of its last use

    @property
    def sessions(self) -> int:
        return len(self._lru)

    def get(self, owner: Owner, session_id: int) -> Session | None:
        """The session `session_id` if `owner` opened it: to anyone else it does not exist."""
        session = self._lru.get(session_id)
        return session if session is not None and session.owner == owner else None

    def begin(
        self, owner: Owner, session_id: int, epoch: int,
        asked: list[tuple[Key, FetchPartition]], forgotten: Sequence[Key],
    ) -> Plan:  # fmt: skip
        """What a fetch is, read in the connection's order (Kafka's FetchManager.newContext):
        a full fetch closes the session it names; an incremental one must name a session
        of its owner at its current epoch, and updates it."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != NO_SESSION and (session := self.get(owner, session_id)):
                self.remove(session)
            return Full(asked, open=epoch == INITIAL_EPOCH)
        session = self.get(owner, session_id)
        if session is None:
            return Refused(ErrorCode.fetch_session_id_not_found)
        if session.epoch != epoch:
            return Refused(ErrorCode.invalid_fetch_session_epoch)
        session.update(asked, forgotten)
        if len(session.partitions) > self.max_partitions:
            self.remove(session)  # the client starts over with a full fetch, sessionless
            return Refused(ErrorCode.fetch_session_id_not_found)
        if not session.partitions:
            self.remove(session)
            return Full([], open=False)
        self._touch(session, self._clock())
        session.epoch = next_epoch(session.epoch)
        return Incremental(session, session.epoch)

    def answer(
        self, plan: Incremental, parts: list[tuple[Key, PartitionData]]
    ) -> tuple[ErrorCode, list[tuple[Key, PartitionData]]]:
        """An incremental fetch's answer: its partitions with something to say, or
        INVALID_FETCH_SESSION_EPOCH if another request of the session came after it."""
        if plan.session.epoch != plan.epoch:
            return ErrorCode.invalid_fetch_session_epoch, []
        return ErrorCode.none, plan.session.answered(parts)

    def open(self, owner: Owner, parts: list[tuple[Key, FetchPartition, PartitionData]]) -> int:
        """A session for a full fetch's answer if there is room (its id), else NO_SESSION."""
        if len(parts) > self.max_partitions or self.slots <= 0:
            return NO_SESSION
        now = self._clock()
        mine = self._mine.get(owner.principal, {})
        if len(mine) >= self.per_principal:
            if not self._evict(mine, len(parts), now):
                return NO_SESSION
        elif len(self._lru) >= self.slots and not self._evict(self._lru, len(parts), now):
            return NO_SESSION
        session = Session(self._fresh_id(), owner, now, now)
        for key, asked, part in parts:
            session.partitions[key] = Cached(
                asked, part.high_watermark, part.log_start_offset, part.last_stable_offset
            )
        self._mine.setdefault(owner.principal, {})
        self._touch(session, now)
        return session.id

    def remove(self, session: Session) -> None:
        if self._lru.pop(session.id, None) is None:
            return
        mine = self._mine[session.owner.principal]
        del mine[session.id]
        if not mine:
            del self._mine[session.owner.principal]
        self.partitions -= session.size
        self._retired.add(session.id)

    def _touch(self, session: Session, now: int) -> None:
        """Kafka's `touch`: last used now, its size and evictability as of now."""
        if self._lru.pop(session.id, None) is not None:
            self.partitions -= session.size
        self._mine[session.owner.principal].pop(session.id, None)
        session.last_used_ms = now
        session.size = len(session.partitions)
        session.evictable = now - session.created_ms > self.eviction_ms
        self._lru[session.id] = session
        self._mine[session.owner.principal][session.id] = session
        self.partitions += session.size

    def _evict(self, among: dict[int, Session], size: int, now: int) -> bool:
        """Kafka's `tryEvict` over `among` (ordered by last use): the least recently used
        if idle longer than eviction_ms; else the smallest evictable one (ties: the lower
        id) if it is smaller than the new session."""
        if not among:
            return False
        oldest = _least_recent(among)
        if now - oldest.last_used_ms > self.eviction_ms:
            victim = oldest
        else:
            evictable = [s for s in among.values() if s.evictable]
            if not evictable:
                return False
            victim = min(evictable, key=lambda s: (s.size, s.id))
            if size <= victim.size:
                return False
        self.remove(victim)
        self.evictions += 1
        return True

    def _fresh_id(self) -> int:
        while True:
            candidate = self._new_id()
            if candidate not in self._lru and candidate not in self._retired:
                return candidate


def _least_recent(among: dict[int, Session]) -> Session:
    """The first of `among` by (last use, id), as Kafka's `lastUsed` tree orders them:
    `among` is in order of last use already, so only its first millisecond is looked at."""
    first = next(iter(among.values()))
    best = first
    for session in among.values():
        if session.last_used_ms != first.last_used_ms:
            break
        best = min(best, session, key=lambda s: s.id)
    return best


class _Recent:
    """The last `size` ids retired, so a client still holding one is not mistaken for
    the next session given it."""

    def __init__(self, size: int) -> None:
        self._order: deque[int] = deque()
        self._ids: set[int] = set()
        self._size = size

    def add(self, session_id: int) -> None:
        if len(self._order) >= self._size:
            self._ids.discard(self._order.popleft())
        self._order.append(session_id)
        self._ids.add(session_id)

    def __contains__(self, session_id: int) -> bool:
        return session_id in self._ids
