"""Plain data of consumer groups, shared by the coordinator, its durable store and
the subscription mirror. No I/O and no Pulsar here (docs/architecture.md: groups/)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kop.groups.consumer.records import LoadedConsumerGroups
from kop.groups.share.stored import LoadedShareGroups


class GroupState(enum.Enum):
    """Kafka's classic group states, spelled as DescribeGroups/ListGroups report them."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class TopicPartition:
    """A Kafka topic as the client named it (kop's namespace mapping is applied by
    the handlers) and a partition index."""

    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_ms: int = 0  # when it was committed, for offset retention
    expire_ms: int | None = None  # explicit expiry (OffsetCommit v1 retention), else None


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """What survives a restart of one member of the current generation."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]  # (name, subscription metadata), client order
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """A group's durable record (Kafka's GroupMetadataValue): written when a
    generation completes or the group empties, reloaded by a restarted kop."""

    group_id: str
    protocol_type: str | None
    generation: int
    protocol: str | None
    leader: str | None
    state_ms: int  # when the current generation (or emptiness) began
    members: tuple[MemberMetadata, ...] = ()


@dataclass(slots=True)
class LoadedGroups:
    """Everything one offsets-topic partition held when it was read back."""

    groups: dict[str, GroupMetadata] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, CommittedOffset]] = field(default_factory=dict)
    consumer: LoadedConsumerGroups = field(default_factory=LoadedConsumerGroups)
    share: LoadedShareGroups = field(default_factory=LoadedShareGroups)
    # producer id -> group -> offsets committed in its transaction, not yet ended
    pending: dict[int, dict[str, dict[TopicPartition, CommittedOffset]]] = field(
        default_factory=dict
    )
