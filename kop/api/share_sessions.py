"""Share sessions (KIP-932): per member of a share group, the partitions its
ShareFetches cover and the epoch its next request must carry. Per instance, as
Kafka's share-partition leaders keep them; each is its principal's alone (the member
id is chosen by the client: another principal naming it finds no session), and one
principal holds at most `per_principal` of the instance's `capacity`.

Epochs: 0 opens a session (replacing the member's, whose acquired records the
caller releases), -1 closes it after the request, anything else must be the
session's next epoch (INVALID_SHARE_SESSION_EPOCH) and moves it on. A session also
ends with the connection that opened it (`end`), as Kafka's ShareSessionCache drops a
session when its connection closes.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kop.api.fetch_session import Owner
from kop.protocol.errors import ErrorCode, KafkaError

OPEN_EPOCH = 0
CLOSE_EPOCH = -1
MAX_PARTITIONS = 10_000  # one session's partitions
SharePart = tuple[uuid.UUID, int]


@dataclass(slots=True)
class ShareSession:
    owner: Owner
    group_key: str
    member_id: str
    epoch: int = 1  # the epoch the next request must carry
    partitions: dict[SharePart, str] = field(default_factory=dict)  # -> its Pulsar topic


@dataclass(frozen=True, slots=True)
class Begun:
    """A request's session, and what the caller must release: the acquired records
    of a replaced session's member, in these partitions' topics."""

    session: ShareSession
    closing: bool
    replaced: ShareSession | None = None


class ShareSessions:
    def __init__(self, capacity: int = 2_000, per_principal: int = 200) -> None:
        self.capacity = capacity
        self.per_principal = per_principal
        self._sessions: dict[tuple[str, str], ShareSession] = {}
        self._held: Counter[Owner] = Counter()

    def __len__(self) -> int:
        return len(self._sessions)

    def begin(self, owner: Owner, group_key: str, member_id: str, epoch: int) -> Begun:
        key = (group_key, member_id)
        found = self._sessions.get(key)
        if epoch == OPEN_EPOCH:
            replaced = self._drop(key) if found is not None else None
            if len(self._sessions) >= self.capacity:
                raise KafkaError(
                    ErrorCode.share_session_limit_reached,
                    f"this instance holds {self.capacity} share sessions",
                )
            if self._held[owner] >= self.per_principal:
                raise KafkaError(
                    ErrorCode.share_session_limit_reached,
                    f"at most {self.per_principal} share sessions per principal",
                )
            session = self._sessions[key] = ShareSession(owner, group_key, member_id)
            self._held[owner] += 1
            return Begun(session, False, replaced)
        if found is None or found.owner != owner:
            raise KafkaError(ErrorCode.share_session_not_found, "no share session for the member")
        if epoch == CLOSE_EPOCH:
            self._drop(key)
            return Begun(found, True)
        if epoch != found.epoch:
            raise KafkaError(
                ErrorCode.invalid_share_session_epoch,
                f"share session epoch {epoch}, expected {found.epoch}",
            )
        found.epoch = found.epoch + 1 if found.epoch < 2**31 - 1 else 1
        return Begun(found, False)

    def end(self, session: ShareSession) -> bool:
        """The connection that opened `session` closed: it goes, unless a newer
        session of its member replaced it (whose connection it now is)."""
        key = (session.group_key, session.member_id)
        if self._sessions.get(key) is not session:
            return False
        self._drop(key)
        return True

    def update(
        self, session: ShareSession, added: Iterable[tuple[SharePart, str]],
        forgotten: Iterable[SharePart],
    ) -> None:  # fmt: skip
        for part in forgotten:
            session.partitions.pop(part, None)
        for part, topic in added:
            if part not in session.partitions and len(session.partitions) >= MAX_PARTITIONS:
                raise KafkaError(
                    ErrorCode.invalid_request, f"at most {MAX_PARTITIONS} partitions a session"
                )
            session.partitions[part] = topic

    def _drop(self, key: tuple[str, str]) -> ShareSession:
        session = self._sessions.pop(key)
        self._held[session.owner] -= 1
        if not self._held[session.owner]:
            del self._held[session.owner]
        return session
