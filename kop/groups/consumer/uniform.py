"""The ``uniform`` assignor: balanced first, sticky second.

Kafka's default server-side assignor. Every partition of every subscribed
topic that exists goes to exactly one of that topic's subscribers, the members'
partition counts are as even as the subscriptions allow, and, within that,
as few partitions as possible change hands: every partition that moves is
revoked from one member and fetched from scratch by another, so a move costs
a pause in consumption.

Like Kafka's UniformAssignor it has two strategies, chosen by the shape of
the group:

- **Homogeneous** (every member subscribes to the same topics, as far as they
  exist): the counts differ by at most one, and the number of partitions
  revoked from members is the least any such assignment needs. Kafka since
  KAFKA-18688 lets whichever members already hold more than the minimum keep
  the one extra partition; before it, the first members in iteration order
  got the extras and a balanced assignment could still be reshuffled.
  Here the extras likewise go to the members that hold more, which is what
  makes the number of moves the least possible.
- **Heterogeneous** (see uniform_spread.py): every member keeps what it still
  may hold, the free partitions go to the least loaded subscribers, then
  partitions move from heavier to lighter members until no move could even
  the counts out further.

Members are numbered in member id order and topics in topic id order, and
every tie is broken by those numbers, so the result depends on the content
of the input only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from kop.groups.consumer.subscriptions import cohorts, numbered, sorted_topics
from kop.groups.consumer.uniform_spread import spread

if TYPE_CHECKING:
    from kop.groups.consumer.assignors import Assignment, MemberSpec, TopicId

Holding = list[tuple[int, int]]
"""One member's partitions as (topic number, partition) pairs."""


class UniformAssignor:
    """Kafka's ``uniform`` server-side assignor (see the module docstring)."""

    name: str = "uniform"

    def assign(
        self, members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]
    ) -> dict[str, Assignment]:
        """Every member's new target assignment; members are keyed by member id."""
        member_ids = sorted(members)
        groups = cohorts(member_ids, members, partitions)
        topics = sorted_topics(set().union(*groups))
        to_numbers = numbered(topics)
        number = {topic: j for j, topic in enumerate(topics)}
        counts = [partitions[topic] for topic in topics]
        position = {member_id: i for i, member_id in enumerate(member_ids)}
        subscribers = [
            (to_numbers(group), [position[m] for m in ids]) for group, ids in groups.items()
        ]
        wanted: list[frozenset[int]] = [frozenset()] * len(member_ids)
        for numbers, indices in subscribers:
            for i in indices:
                wanted[i] = numbers
        held = _still_held(member_ids, members, wanted, number, counts)

        if len(subscribers) <= 1:
            placed = _homogeneous(held, counts, wanted[0] if wanted else frozenset())
        else:
            placed = spread(subscribers, counts, held)
        return {m: _assignment(topics, placed[i]) for i, m in enumerate(member_ids)}


def _still_held(
    member_ids: Sequence[str],
    members: Mapping[str, MemberSpec],
    wanted: Sequence[frozenset[int]],
    number: Mapping[TopicId, int],
    counts: Sequence[int],
) -> list[Holding]:
    """What each member may keep of its previous assignment.

    A partition is kept only if its topic still exists, the member still
    subscribes to it and the partition is below the count. Each member's
    pairs come out ascending. A partition two
    members both claim (a previous assignment the coordinator should never
    produce) stays with the first in member id order, so that the partitions
    start out held at most once.
    """
    claimed: set[tuple[int, int]] = set()
    held: list[Holding] = []
    for i, member_id in enumerate(member_ids):
        current = members[member_id].current
        mine: Holding = []
        for topic in sorted_topics(current):
            j = number.get(topic)
            if j is None or j not in wanted[i]:
                continue
            for p in sorted(current[topic]):
                if 0 <= p < counts[j] and (j, p) not in claimed:
                    claimed.add((j, p))
                    mine.append((j, p))
        held.append(mine)
    return held


def _homogeneous(
    held: Sequence[Holding], counts: Sequence[int], common: frozenset[int]
) -> list[Holding]:
    """Counts within one of each other, with the fewest partitions moved.

    With ``total`` partitions and ``n`` members, ``total % n`` members get
    ``total // n + 1`` and the others ``total // n``. A member keeps its
    partitions up to its quota, so the only choice that matters for moves is
    who gets the larger quota: a member holding more than ``total // n``
    keeps one partition more with it, anyone else keeps the same either way.
    Over its quota a member keeps its lowest (topic, partition) pairs.
    So the larger quotas go to such members first (in member order), which
    keeps the most partitions any balanced assignment can keep. An
    assignment that is already balanced therefore comes back unchanged.

    What is not kept (partitions nobody holds, and the surplus of members
    over their quota) is handed out in (topic, partition) order, each
    member in turn taking what it lacks, so that a fresh group gets
    contiguous runs of each topic.
    """
    n = len(held)
    if n == 0:
        return []
    base, extra = divmod(sum(counts[j] for j in common), n)
    above = [i for i in range(n) if len(held[i]) > base]
    rest = [i for i in range(n) if len(held[i]) <= base]
    quota = [base] * n
    for i in (above + rest)[:extra]:
        quota[i] += 1

    kept = [list(held[i][: quota[i]]) for i in range(n)]
    taken = {tp for holding in kept for tp in holding}
    pool = [(j, p) for j in sorted(common) for p in range(counts[j]) if (j, p) not in taken]
    at = 0
    for i in range(n):
        lacking = quota[i] - len(kept[i])
        kept[i].extend(pool[at : at + lacking])
        at += lacking
    return kept


def _assignment(topics: Sequence[TopicId], holding: Iterable[tuple[int, int]]) -> Assignment:
    """A member's (topic number, partition) pairs as the Assignment type."""
    by_topic: dict[int, list[int]] = {}
    for j, p in sorted(holding):
        by_topic.setdefault(j, []).append(p)
    return {topics[j]: frozenset(ps) for j, ps in by_topic.items()}
