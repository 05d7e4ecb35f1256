"""Share-group offsets at the group's coordinator: each partition's part is done by the
instance that leads it (kop.groups.share.state), here when that is this instance, and
otherwise asked of the leader over the instances' own connections (kop.sasl.peer_client)
with the same three requests a client sends, naming the group by kop's key for it and
the topic by its full Pulsar name (D30). A leader that cannot be asked leaves its
partitions with a retriable error, as Kafka's share coordinator would report its own
unavailability.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kio.schema.alter_share_group_offsets.v0.request import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from kio.schema.delete_share_group_offsets.v0.request import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
)
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from kop.aio.futures import side_by_side
from kop.cluster.member import Member
from kop.groups.share.state import ShareStates, StartOffset
from kop.log.partition_log import PartitionLog
from kop.protocol.errors import ErrorCode, KafkaError
from kop.sasl.peer_client import PeerUnreachable
from kop.storage.types import AdminError, StorageError

# Partitions (or leaders) asked at once for one request: each costs the storage admin a
# call (the cursor), and one request may name many thousands of partitions.
SIDE_BY_SIDE = 16


class PeerAsk(Protocol):
    """kop.sasl.peer_client.PeerClient: one request to another instance, its answer;
    PeerUnreachable when it cannot be asked."""

    async def ask(self, to: Member, body: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class ShareTarget:
    """One partition of a topic, as the coordinator resolved it for the client."""

    topic: str  # the topic's full Pulsar name: how instances name it to each other
    index: int
    partition_topic: str
    compacted: bool = False  # opened as its cleanup policy says (kop.partitions.manager)
    expire_ms: int | None = None


class ShareOffsets:
    def __init__(
        self,
        states: ShareStates,
        open_log: Callable[[ShareTarget], Awaitable[PartitionLog]],
        group_of: Callable[[str], str],
        owner: Callable[[str], Member | None],
        me: Member,
        peers: PeerAsk,
    ) -> None:
        self.states = states
        self._open_log = open_log  # the partition's log, NOT_LEADER_OR_FOLLOWER unless led here
        self._group_of = group_of  # a group key -> the group id the client named
        self._owner = owner
        self._me = me
        self._peers = peers

    # -- at the coordinator -------------------------------------------------------------

    async def describe(
        self, key: str, targets: Sequence[ShareTarget]
    ) -> dict[ShareTarget, StartOffset | KafkaError]:
        out: dict[ShareTarget, StartOffset | KafkaError] = {}

        async def here(t: ShareTarget) -> None:
            out[t] = await _kafka_outcome(self.describe_here(key, t))

        async def there(leader: Member, ts: list[ShareTarget]) -> None:
            answer = await self._ask(leader, _describe_request(key, ts))
            if isinstance(answer, KafkaError):
                out.update(dict.fromkeys(ts, answer))
                return
            got = {
                (t.topic_name, int(p.partition_index)): p
                for g in answer.groups for t in g.topics for p in t.partitions
            }  # fmt: skip
            for t in ts:
                p = got.get((t.topic, t.index))
                if p is None:
                    out[t] = KafkaError(ErrorCode.unknown_server_error, "not answered")
                elif p.error_code != ErrorCode.none:
                    out[t] = KafkaError(ErrorCode(p.error_code), p.error_message or "")
                else:
                    out[t] = StartOffset(int(p.start_offset), int(p.leader_epoch), int(p.lag))

        await self._by_leader(targets, here, there, out)
        return out

    async def alter(
        self, key: str, offsets: Mapping[ShareTarget, int]
    ) -> dict[ShareTarget, KafkaError | None]:
        out: dict[ShareTarget, KafkaError | None] = {}

        async def here(t: ShareTarget) -> None:
            out[t] = await _kafka_outcome(self.alter_here(key, t, offsets[t]))

        async def there(leader: Member, ts: list[ShareTarget]) -> None:
            answer = await self._ask(leader, _alter_request(key, {t: offsets[t] for t in ts}))
            if isinstance(answer, KafkaError):
                out.update(dict.fromkeys(ts, answer))
                return
            codes = {
                (r.topic_name, int(p.partition_index)): (p.error_code, p.error_message)
                for r in answer.responses for p in r.partitions
            }  # fmt: skip
            for t in ts:
                code, message = codes.get((t.topic, t.index), (answer.error_code, None))
                ok = code == ErrorCode.none
                out[t] = None if ok else KafkaError(ErrorCode(code), message or "")

        await self._by_leader(offsets, here, there, out)
        return out

    async def delete(self, key: str, targets: Sequence[ShareTarget]) -> bool | KafkaError:
        """The group's state on every partition of one topic is gone: True if it had any,
        False if none; the first failure otherwise."""
        found: dict[ShareTarget, bool | KafkaError] = {}

        async def here(t: ShareTarget) -> None:
            found[t] = await _kafka_outcome(self.delete_here(key, t))

        async def there(leader: Member, ts: list[ShareTarget]) -> None:
            # The leader deletes the group's state on every partition of the topic it leads.
            answer = await self._ask(leader, _delete_request(key, ts[0].topic))
            found.update(dict.fromkeys(ts, _deleted(answer)))

        await self._by_leader(targets, here, there, found)
        failed = [v for v in found.values() if isinstance(v, KafkaError)]
        if failed:
            return failed[0]
        return any(found.values())

    # -- at the partition's leader --------------------------------------------------------

    async def describe_here(self, key: str, t: ShareTarget) -> StartOffset:
        return await self.states.describe(self._group_of(key), await self._open_log(t))

    async def alter_here(self, key: str, t: ShareTarget, offset: int) -> None:
        await self.states.alter(key, self._group_of(key), await self._open_log(t), offset)

    async def delete_here(self, key: str, t: ShareTarget) -> bool:
        return await self.states.delete(key, self._group_of(key), await self._open_log(t))

    # -- inside ---------------------------------------------------------------------------

    async def _by_leader(
        self,
        targets: Iterable[ShareTarget],
        here: Callable[[ShareTarget], Awaitable[None]],
        there: Callable[[Member, list[ShareTarget]], Awaitable[None]],
        out: dict[ShareTarget, Any],
    ) -> None:
        mine: list[ShareTarget] = []
        theirs: dict[int, tuple[Member, list[ShareTarget]]] = {}
        for t in targets:
            leader = self._owner(t.partition_topic)
            if leader is None:
                out[t] = KafkaError(ErrorCode.leader_not_available, "no instance is alive")
            elif leader.instance == self._me.instance:
                mine.append(t)
            else:
                theirs.setdefault(leader.node_id, (leader, []))[1].append(t)
        calls = [here(t) for t in mine] + [there(m, ts) for m, ts in theirs.values()]
        await side_by_side(calls, SIDE_BY_SIDE)

    async def _ask(self, leader: Member, body: Any) -> Any:
        try:
            return await self._peers.ask(leader, body)
        except PeerUnreachable as exc:  # down, not listening, a bad answer
            return KafkaError(ErrorCode.leader_not_available, f"instance {leader.node_id}: {exc}")


async def _kafka_outcome(call: Awaitable[Any]) -> Any:
    """The call's result, or the KafkaError it is answered with."""
    try:
        return await call
    except KafkaError as exc:
        return exc
    except (StorageError, AdminError) as exc:
        return KafkaError(ErrorCode.kafka_storage_error, str(exc))


def _deleted(answer: Any) -> bool | KafkaError:
    """A leader's answer to a delete: did it hold state of the group on the topic?"""
    if isinstance(answer, KafkaError):
        return answer
    codes = [answer.error_code, *(r.error_code for r in answer.responses)]
    failed = [c for c in codes if c not in (ErrorCode.none, ErrorCode.unknown_topic_or_partition)]
    if failed:
        return KafkaError(ErrorCode(failed[0]), answer.error_message or "")
    return any(r.error_code == ErrorCode.none for r in answer.responses)


def _describe_request(key: str, ts: list[ShareTarget]) -> DescribeShareGroupOffsetsRequest:
    topics: dict[str, list[int]] = {}
    for t in ts:
        topics.setdefault(t.topic, []).append(t.index)
    return DescribeShareGroupOffsetsRequest(groups=(DescribeShareGroupOffsetsRequestGroup(
        group_id=GroupId(key),
        topics=tuple(
            DescribeShareGroupOffsetsRequestTopic(
                topic_name=TopicName(name), partitions=tuple(map(i32, parts))
            )
            for name, parts in topics.items()
        ),
    ),))  # fmt: skip


def _alter_request(key: str, offsets: Mapping[ShareTarget, int]) -> AlterShareGroupOffsetsRequest:
    topics: dict[str, list[AlterShareGroupOffsetsRequestPartition]] = {}
    for t, offset in offsets.items():
        topics.setdefault(t.topic, []).append(
            AlterShareGroupOffsetsRequestPartition(
                partition_index=i32(t.index), start_offset=i64(offset)
            )
        )
    return AlterShareGroupOffsetsRequest(
        group_id=GroupId(key),
        topics=tuple(
            AlterShareGroupOffsetsRequestTopic(topic_name=TopicName(n), partitions=tuple(ps))
            for n, ps in topics.items()
        ),
    )


def _delete_request(key: str, topic: str) -> DeleteShareGroupOffsetsRequest:
    return DeleteShareGroupOffsetsRequest(
        group_id=GroupId(key),
        topics=(DeleteShareGroupOffsetsRequestTopic(topic_name=TopicName(topic)),),
    )
