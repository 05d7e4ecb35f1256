"""What both assignors first need of the members: who subscribes to what.

Members of one group mostly subscribe to the same few sets of topics, and a
set can be large (a pattern subscription may match a thousand topics). A
topic id is a uuid.UUID, whose hash is computed in Python, so going through
every topic of every member costs far more than the assignment itself. Here
each distinct set is looked at once, with set operations that reuse the
hashes the sets already hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kop.groups.consumer.assignors import MemberSpec, TopicId

_BY_INT = attrgetter("int")


def numbered(topics: Iterable[TopicId]) -> Callable[[frozenset[TopicId]], frozenset[int]]:
    """``topics`` numbered from 0 in the order given, and a function that
    turns a set of them into their numbers. It looks the ids up by their
    integer, whose hash is computed in C, not by the UUID itself."""
    number = {topic.int: j for j, topic in enumerate(topics)}.__getitem__

    def numbers(group: frozenset[TopicId]) -> frozenset[int]:
        return frozenset(map(number, map(_BY_INT, group)))

    return numbers


def sorted_topics(topics: Iterable[TopicId]) -> list[TopicId]:
    """Topic ids in ascending order (a UUID orders by its integer, read here
    without a Python-level comparison per pair)."""
    return sorted(topics, key=_BY_INT)


def cohorts(
    order: Sequence[str], members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]
) -> dict[frozenset[TopicId], list[str]]:
    """The members (ids, in ``order``) grouped by the topics they subscribe to
    that exist with at least one partition: a topic that is missing from
    ``partitions`` or empty is nobody's to assign."""
    existing = set(partitions)
    existing.difference_update([topic for topic, count in partitions.items() if count <= 0])
    effective: dict[frozenset[TopicId], frozenset[TopicId]] = {}
    grouped: dict[frozenset[TopicId], list[str]] = {}
    for member_id in order:
        subscribed = members[member_id].topics
        topics = effective.get(subscribed)
        if topics is None:
            topics = effective[subscribed] = subscribed & existing
        grouped.setdefault(topics, []).append(member_id)
    return grouped
