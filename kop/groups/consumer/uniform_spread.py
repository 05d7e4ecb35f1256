"""The uniform assignor for members that subscribe to different topics.

Here a partition may only go to its topic's subscribers, so equal counts are
often impossible (one member alone on a topic of fifty partitions holds
fifty). What "as balanced as the subscriptions allow" means: no chain of
moves, each handing one partition to another subscriber of its topic, could
take a partition off a member and end with another member that holds at
least two fewer. Such a chain is the only kind of change that evens counts
out, so when none is left the assignment minimises the sum of the squares of
the counts, which also minimises the largest count.

The steps, in the order Kafka's UniformHeterogeneousAssignmentBuilder takes
the first three:

1. Every member keeps what it still may hold (checked by the caller).
2. The free partitions are handed out one at a time, each to the least
   loaded subscriber of its topic. Topics go in Kafka's order: most
   partitions per subscriber first, then fewest subscribers, then topic id;
   the topics that are hardest to spread go while the most room is left.
3. Per topic, a partition moves from its most loaded holder to the least
   loaded subscriber while they differ by two or more, over all topics
   again while anything moved, for at most 16 rounds as in Kafka. This does
   the bulk of the work cheaply, but it only sees single moves: with
   members A and B on topic X and B and C on topic Y, counts 9, 10, 11 stay
   as they are, because no single topic has subscribers two apart.
4. Kafka stops there. Here chains are then searched for (breadth first from
   the most loaded members, so that each chain moves as few partitions as a
   chain can) until none is left. This also finishes what the rounds of
   step 3 left undone, when they ran out.

Stickiness here is best effort, as in Kafka: members keep everything they
may, and only balance moves partitions, the ones a member got last first.
Unlike the homogeneous case the number of moves is not the least possible:
step 3 takes the topics in a fixed order, and can move a partition of one
topic where a move in another would have done (in a sample of small random
groups checked by brute force, about one in 140 moved one partition
more than the least needed for the same balance).

Each move in step 3 or chain in step 4 lowers the sum of the squares of the
counts by at least two, so both end. A search that finds no chain freezes
every member it reached: nothing can ever leave that set of members again,
and they are all within one of the most loaded, so they are never searched
from again.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence

_ROUNDS = 16
"""Kafka's MAX_ITERATION_COUNT for the per-topic rounds of step 3."""


Cohorts = Sequence[tuple[frozenset[int], Sequence[int]]]
"""Members grouped by subscription: (topic numbers, member numbers)."""


class _Spread:
    """Who holds which partitions, and how many each member holds."""

    def __init__(
        self, cohorts: Cohorts, counts: Sequence[int], held: Sequence[Sequence[tuple[int, int]]]
    ) -> None:
        self.counts = counts
        self.subscribers: list[list[int]] = [[] for _ in counts]
        for topics, members in cohorts:
            for j in topics:
                self.subscribers[j].extend(members)
        for subscribers in self.subscribers:
            subscribers.sort()
        self.owner = [[-1] * count for count in counts]
        self.holds: list[dict[int, list[int]]] = [{} for _ in held]
        self.load = [0] * len(held)
        for i, holding in enumerate(held):
            for j, p in holding:
                self.give(j, p, i)

    def give(self, j: int, p: int, member: int) -> None:
        self.holds[member].setdefault(j, []).append(p)
        self.owner[j][p] = member
        self.load[member] += 1

    def move(self, j: int, source: int, target: int) -> None:
        """Move one of ``source``'s partitions of topic ``j`` (the last it got)."""
        mine = self.holds[source][j]
        p = mine.pop()
        if not mine:
            del self.holds[source][j]
        self.load[source] -= 1
        self.give(j, p, target)

    def spread_of(self, j: int) -> int:
        """How many more the heaviest holder of topic ``j`` holds than its
        lightest subscriber: a move within the topic helps only from two."""
        load = self.load.__getitem__
        holders = set(self.owner[j])
        holders.discard(-1)
        if not holders:
            return 0
        return max(map(load, holders)) - min(map(load, self.subscribers[j]))


def spread(
    cohorts: Cohorts, counts: Sequence[int], held: Sequence[Sequence[tuple[int, int]]]
) -> list[list[tuple[int, int]]]:
    """Each member's (topic number, partition) pairs; see the module docstring."""
    state = _Spread(cohorts, counts, held)
    order = sorted(
        range(len(counts)),
        key=lambda j: (
            -counts[j] / len(state.subscribers[j]),  # a float, as Kafka compares them
            len(state.subscribers[j]),
            j,
        ),
    )
    _hand_out(state, order)
    _even_out_topics(state, [j for j in order if len(state.subscribers[j]) > 1])
    _follow_chains(state)
    return [[(j, p) for j, ps in holds.items() for p in ps] for holds in state.holds]


def _hand_out(state: _Spread, order: Sequence[int]) -> None:
    """Step 2: each free partition to the least loaded subscriber of its topic
    (the first in member order among equals)."""
    load = state.load.__getitem__
    for j in order:
        subscribers = state.subscribers[j]
        free = [p for p, owner in enumerate(state.owner[j]) if owner < 0]
        if len(free) < 4:
            for p in free:
                state.give(j, p, min(subscribers, key=load))
            continue
        lightest = [(state.load[i], i) for i in subscribers]
        heapq.heapify(lightest)
        for p in free:
            least, i = heapq.heappop(lightest)
            state.give(j, p, i)
            heapq.heappush(lightest, (least + 1, i))


def _even_out_topics(state: _Spread, topics: Sequence[int]) -> None:
    """Step 3: single moves within each topic, round after round.

    A topic is looked at again only if one of its subscribers' counts
    changed in the round before; the others cannot have a move.
    """
    for _ in range(_ROUNDS):
        changed: set[int] = set()
        for j in topics:
            if state.spread_of(j) >= 2:
                _even_out_topic(state, j, changed)
        if not changed:
            return
        topics = [j for j in topics if not changed.isdisjoint(state.subscribers[j])]


def _even_out_topic(state: _Spread, j: int, changed: set[int]) -> None:
    """Move topic ``j``'s partitions from its most loaded holder to its least
    loaded subscriber while they differ by two or more.

    Both are kept in heaps whose entries go stale when a count changes; a
    stale entry is dropped when it comes to the top, and a fresh one is
    pushed with every change, so each move costs a few heap operations.
    """
    load, holds = state.load, state.holds
    heaviest = [(-load[i], i) for i in state.subscribers[j] if j in holds[i]]
    lightest = [(load[i], i) for i in state.subscribers[j]]
    heapq.heapify(heaviest)
    heapq.heapify(lightest)
    while heaviest:
        minus, source = heaviest[0]
        if -minus != load[source] or j not in holds[source]:
            heapq.heappop(heaviest)
            continue
        low, target = lightest[0]
        if low != load[target]:
            heapq.heappop(lightest)
            continue
        if load[source] - load[target] < 2:
            return
        heapq.heappop(heaviest)
        heapq.heappop(lightest)
        state.move(j, source, target)
        changed.update((source, target))
        if j in holds[source]:
            heapq.heappush(heaviest, (-load[source], source))
        heapq.heappush(lightest, (load[source], source))
        heapq.heappush(lightest, (load[target], target))
        heapq.heappush(heaviest, (-load[target], target))


def _follow_chains(state: _Spread) -> None:
    """Step 4: apply chains of moves until none could even the counts out."""
    active = [True] * len(state.load)
    while True:
        loads = [state.load[i] for i in range(len(active)) if active[i]]
        if not loads or max(loads) - min(loads) <= 1:
            return
        top = max(loads)
        sources = [i for i in range(len(active)) if active[i] and state.load[i] == top]
        chain, reached = _find_chain(state, sources, active, top - 2)
        if chain is None:
            for i in reached:
                active[i] = False
            continue
        for j, source, target in chain:
            state.move(j, source, target)


def _find_chain(
    state: _Spread, sources: Sequence[int], active: Sequence[bool], at_most: int
) -> tuple[list[tuple[int, int, int]] | None, set[int]]:
    """The shortest chain from one of ``sources`` to an active member holding
    ``at_most`` partitions or fewer, as (topic, source, target) moves in the
    order to apply them; or None, with every member the search reached.

    Each topic is expanded once: the first holder reached reaches all of its
    subscribers. Frozen members are skipped, since no chain through them
    can end anywhere lighter (the module docstring says why).
    """
    came_from: dict[int, tuple[int, int]] = {}
    reached = set(sources)
    expanded: set[int] = set()
    queue = deque(sources)
    while queue:
        member = queue.popleft()
        for j in sorted(state.holds[member]):
            if j in expanded:
                continue
            expanded.add(j)
            for other in state.subscribers[j]:
                if other in reached or not active[other]:
                    continue
                reached.add(other)
                came_from[other] = (member, j)
                if state.load[other] <= at_most:
                    return _unwind(came_from, other), reached
                queue.append(other)
    return None, reached


def _unwind(came_from: dict[int, tuple[int, int]], end: int) -> list[tuple[int, int, int]]:
    """The moves that lead to ``end``, last hop first: each member along the
    chain gives before it receives, so it still holds what it gives."""
    moves: list[tuple[int, int, int]] = []
    target = end
    while target in came_from:
        source, j = came_from[target]
        moves.append((j, source, target))
        target = source
    return moves
