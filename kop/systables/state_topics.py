"""kop's state topics (the consumer offsets and the transaction state) remember each
other, so that one deleted or replaced under kop is noticed instead of silently made
anew (issue 33).

Before, a start that found the offsets topic missing created it empty: every group's
committed offsets were gone and nothing said so, whether an operator's mistake or a
role that could administer the system namespace did it. Now each state topic carries
a random id of its own (`kop.state-id`) and the id of the other (`kop.sibling-id`) as
Pulsar topic properties. A start that finds one missing while the other remembers it,
or one whose id is not the one remembered (deleted and made again), refuses with one
line saying which, unless `recreate_lost_state_topics` says to begin afresh. While kop
runs, `StateTopicWatch` looks every `interval_s` and sets `kop_state_topic_lost`.

Both gone together (the namespace wiped) looks like a first start: nothing is left
that could remember them.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

from kop.storage.naming import PulsarTopic
from kop.storage.port import StorageAdmin
from kop.storage.types import AdminError, TopicInfo

log = logging.getLogger(__name__)

STATE_ID = "kop.state-id"
SIBLING_ID = "kop.sibling-id"


class StateTopicLost(Exception):
    """A state topic was deleted or replaced under kop; the message says which."""


async def ensure_state_topics(
    admin: StorageAdmin, pair: tuple[tuple[PulsarTopic, int], tuple[PulsarTopic, int]],
    recreate: bool = False,
) -> dict[str, str]:  # fmt: skip
    """Both topics, created on the first start, checked on every other; their ids
    (full name -> id). Raises StateTopicLost."""
    (a, a_parts), (b, b_parts) = pair
    infos, props, lost = await _look(admin, a, b)
    if lost:
        # Instances starting together: one may read a topic as missing, then read the
        # other remembering it because another instance made both in between. A sibling
        # id is written only once both topics exist with their ids, so a topic the
        # second look (after the first saw it remembered) still misses was deleted.
        infos, props, lost = await _look(admin, a, b)
    if lost and not recreate:
        raise StateTopicLost(
            "; ".join(lost) + ": what it held (committed offsets, transactions) is lost. "
            "Restore it, or start once with recreate_lost_state_topics = true to begin afresh"
        )
    for why in lost:
        log.error("%s; recreate_lost_state_topics: beginning afresh", why)
    ids: dict[str, str] = {}
    for topic, parts in ((a, a_parts), (b, b_parts)):
        exists, own_id = infos[topic.full] is not None, props[topic.full].get(STATE_ID)
        ids[topic.full] = await _own(admin, topic, parts, exists, own_id)
    for x, y in ((a, b), (b, a)):
        if props[x.full].get(SIBLING_ID) != ids[y.full]:
            await admin.update_properties(x, {SIBLING_ID: ids[y.full]})
    return ids


async def _look(
    admin: StorageAdmin, a: PulsarTopic, b: PulsarTopic
) -> tuple[dict[str, TopicInfo | None], dict[str, dict[str, str]], list[str]]:
    """Both topics as they are now, their properties, and why either is lost."""
    infos = {t.full: await admin.topic_info(t) for t in (a, b)}
    props = {name: dict(info.properties) if info else {} for name, info in infos.items()}
    lost = [
        _why(x, infos[x.full] is not None, props[x.full].get(STATE_ID), props[y.full])
        for x, y in ((a, b), (b, a))
    ]
    return infos, props, [why for why in lost if why]


def _why(topic: PulsarTopic, exists: bool, own_id: str | None, other: dict[str, str]) -> str:
    remembered = other.get(SIBLING_ID)
    if remembered is None:  # the other is new, or from a kop before this check
        return ""
    if not exists:
        return f"kop's state topic {topic.full} was deleted"
    if own_id != remembered:
        return f"kop's state topic {topic.full} was replaced (not the topic kop made)"
    return ""


async def _own(
    admin: StorageAdmin, topic: PulsarTopic, partitions: int, exists: bool, own_id: str | None
) -> str:
    """The topic's id: made with a new one, given one (a kop before this check made
    it, or it replaces a lost one), or the one it has."""
    if not exists:
        new = uuid.uuid4().hex
        try:
            await admin.create_partitioned(topic, partitions, {STATE_ID: new})
            return new
        except AdminError as exc:
            if exc.status != 409:
                raise
        info = await admin.topic_info(topic)  # another instance starting made it
        own_id = info.properties.get(STATE_ID) if info else None
    if own_id is None:
        # The same id whichever instance adopts it first: several starting together
        # must agree on it (random ones did not: the last writer's won, and the others
        # then saw "their" topic replaced). A topic made again by someone else after
        # this has no id, so it is still told apart.
        own_id = f"adopted:{topic.full}"
        await admin.update_properties(topic, {STATE_ID: own_id})
    return own_id


class StateTopicWatch:
    """While kop runs: each state topic still the one it loaded, every `interval_s`;
    `report(topic, lost)` is told each look (the metric), and a change is logged."""

    def __init__(
        self, admin: StorageAdmin, topics: dict[str, PulsarTopic], ids: dict[str, str],
        report: Callable[[str, bool], None], interval_s: float = 30.0,
    ) -> None:  # fmt: skip
        self._admin = admin
        self._topics = topics
        self._ids = ids
        self._report = report
        self._interval_s = interval_s
        self._lost: set[str] = set()

    async def look(self) -> None:
        for name, topic in self._topics.items():
            try:
                info = await self._admin.topic_info(topic)
            except Exception as exc:  # Pulsar away: nothing learnt this time
                log.debug("state topic %s not checked: %s", name, exc)
                continue
            lost = info is None or info.properties.get(STATE_ID) != self._ids[topic.full]
            self._report(name, lost)
            if lost and name not in self._lost:
                log.error(
                    "kop's state topic %s was deleted or replaced while kop ran: what it "
                    "held is lost; restart kop to have it refuse or (with "
                    "recreate_lost_state_topics) begin afresh", topic.full,
                )  # fmt: skip
            self._lost = self._lost - {name} | ({name} if lost else set())

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            await self.look()
