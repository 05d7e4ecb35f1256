"""The server-side assignors of the KIP-848 consumer group protocol.

With KIP-848 the coordinator, not a group leader, computes each member's
target assignment, and a member only names the assignor it wants (or none,
for the group's default). Kafka 4.x ships two, and this module offers the
same two under the same names, so a client configured for either one works
against kop unchanged:

- ``uniform`` (uniform.py): balanced and sticky. It is the default because it
  is Kafka's: ``group.consumer.assignors`` defaults to ``uniform, range``,
  and the first entry is the group default.
- ``range`` (range_assignor.py): contiguous ranges per topic, co-partitioned
  across topics with equal partition counts, for joins.

Both are pure functions of their input: no I/O, no clock, no randomness, and
no dependence on the iteration order of the mappings or sets they are given,
so every coordinator that computes an assignment for the same group state
computes the same one. They bound nothing either: the coordinator bounds how
many members and partitions reach them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from kop.groups.consumer.range_assignor import RangeAssignor
from kop.groups.consumer.uniform import UniformAssignor

TopicId = uuid.UUID
Assignment = dict[TopicId, frozenset[int]]
"""One member's partitions, by topic; a topic it gets nothing of is absent."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor knows of one member.

    ``topics`` are already resolved to ids (the coordinator resolves names
    and regular expressions against the topics that exist). ``current`` is
    the member's part of the previous target assignment: what the sticky
    assignor tries to leave where it is. It may name topics that have since
    gone, or that the member no longer subscribes to, or partitions past a
    topic's count; the assignors drop those. ``rack_id`` is carried for a
    rack-aware assignor: neither of these uses it, as neither of Kafka's
    does.
    """

    member_id: str
    instance_id: str | None
    rack_id: str | None
    topics: frozenset[TopicId]
    current: Mapping[TopicId, frozenset[int]]


class Assignor(Protocol):
    """A server-side assignor, as a member names it in ConsumerGroupHeartbeat."""

    name: str

    def assign(
        self, members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]
    ) -> dict[str, Assignment]:
        """Every member of ``members`` (keyed by member id) to its new target
        assignment. ``partitions`` holds the partition count of every
        subscribed topic that exists; a subscribed topic absent from it is
        assigned to nobody."""
        ...


UNIFORM: Assignor = UniformAssignor()
RANGE: Assignor = RangeAssignor()

ASSIGNORS: Mapping[str, Assignor] = MappingProxyType({UNIFORM.name: UNIFORM, RANGE.name: RANGE})
"""The assignors a member may name, in Kafka's default order of
``group.consumer.assignors``: the first is the group's default."""

DEFAULT_ASSIGNOR = "uniform"
