"""The ``range`` assignor: contiguous partition ranges per topic.

It exists for joins. A stream join reads partition ``p`` of two topics keyed
alike in one member, so the member that gets partition ``p`` of one topic must
get partition ``p`` of the other. Range gives that (co-partitioning) by making
a topic's ranges a function of only two things: the topic's partition count,
and its subscribers in a fixed order. Two topics with the same subscribers and
the same count therefore split identically.

The rules, as Kafka 4.x's server-side RangeAssignor has them (rewritten in
KAFKA-16944, which gave up its earlier stickiness because stickiness and
co-partitioning fight each other):

- Per topic, its subscribers are taken in one order for the whole group:
  static members (those with an instance id) first, by instance id, then the
  others by member id. A restarted static member comes back under a new
  member id but the same instance id, so it gets its old ranges back; that is
  the stickiness range offers.
- Of ``count`` partitions and ``n`` subscribers, each gets ``count // n`` in
  one contiguous range, the ranges following the order, and the first
  ``count % n`` get one more. With more subscribers than partitions the last
  ones get nothing of that topic.
- The previous assignment plays no part, so the result is the same whatever
  the members held before.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from typing import TYPE_CHECKING

from kop.groups.consumer.subscriptions import cohorts, numbered, sorted_topics

if TYPE_CHECKING:
    from kop.groups.consumer.assignors import Assignment, MemberSpec, TopicId


class RangeAssignor:
    """Kafka's ``range`` server-side assignor (see the module docstring)."""

    name: str = "range"

    def assign(
        self, members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]
    ) -> dict[str, Assignment]:
        """Every member's ranges; members are keyed by member id."""
        order = sorted(members, key=lambda member_id: _rank(member_id, members[member_id]))
        groups = list(cohorts(order, members, partitions).items())
        topics = sorted_topics(set().union(*(topics for topics, _ in groups)))
        numbers = numbered(topics)
        groups_of: list[list[int]] = [[] for _ in topics]
        for g, (group, _) in enumerate(groups):
            for j in numbers(group):
                groups_of[j].append(g)

        position = {member_id: k for k, member_id in enumerate(order)}.__getitem__
        ranked_by: dict[tuple[int, ...], list[str]] = {}
        result: dict[str, Assignment] = {member_id: {} for member_id in sorted(members)}
        for topic, which in zip(topics, map(tuple, groups_of), strict=True):
            ranked = ranked_by.get(which)
            if ranked is None:
                ranked = list(chain.from_iterable(groups[g][1] for g in which))
                if len(ranked) > len(which) > 1:
                    # Cohorts are numbered by their first member's rank, so
                    # only cohorts of more than one can interleave.
                    ranked.sort(key=position)
                ranked_by[which] = ranked
            base, extra = divmod(partitions[topic], len(ranked))
            start = 0
            for k, member_id in enumerate(ranked):
                size = base + 1 if k < extra else base
                if not size:
                    break  # base is 0 and the extras are given out: so for all that follow
                result[member_id][topic] = frozenset(range(start, start + size))
                start += size
        return result


def _rank(member_id: str, spec: MemberSpec) -> tuple[int, str, str]:
    """Static members first, by instance id; then the others, by member id.

    Two static members never share an instance id in a sound group; the
    member id after it only keeps the order total if they ever do.
    """
    if spec.instance_id is not None:
        return (0, spec.instance_id, member_id)
    return (1, member_id, "")
