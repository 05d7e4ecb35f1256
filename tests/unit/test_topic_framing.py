"""A topic's id map at the edge (kop.log.framing.TopicFraming): learned on first use and
after a registration here, again in the background once old, at once for an unknown id,
and never hammering a registry that cannot answer."""

from __future__ import annotations

import asyncio

from kop.log.framing import TopicFraming
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.schemas import FramedAs

TOPIC = PulsarTopic(Namespace("t", "ns"), "orders", "orders")


class Ids:
    def __init__(self) -> None:
        self.answer: dict[int, int] = {}
        self.asked = 0
        self.fail = False
        self.gate: asyncio.Event | None = None

    async def ids(
        self, topic: PulsarTopic, *, fresh: bool = False, from_pulsar: bool = False
    ) -> dict[int, FramedAs]:
        self.asked += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise OSError("registry away")
        return {version: FramedAs(sid) for version, sid in self.answer.items()}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_first_use_waits_then_an_old_map_is_learned_in_the_background() -> None:
    ids, clock = Ids(), Clock()
    framing = TopicFraming(ids, TOPIC, refresh_s=5, clock=clock)
    ids.answer = {0: 7}
    assert await framing.for_produce() == {7: 0}
    ids.answer = {0: 7, 1: 9}
    clock.now += 6
    ids.gate = asyncio.Event()
    assert await framing.for_produce() == {7: 0}  # not waited for
    ids.gate.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert await framing.for_produce() == {7: 0, 9: 1}
    assert ids.asked == 2
    await framing.close()


async def test_a_registration_here_is_learned_before_the_next_produce() -> None:
    ids, clock = Ids(), Clock()
    framing = TopicFraming(ids, TOPIC, refresh_s=5, clock=clock)
    assert await framing.for_produce() is None  # no schema: nothing converted
    ids.answer = {0: 3}
    framing.forget()
    assert await framing.for_produce() == {3: 0}


async def test_a_registry_that_cannot_answer_is_asked_again_only_later() -> None:
    ids, clock = Ids(), Clock()
    framing = TopicFraming(ids, TOPIC, refresh_s=5, clock=clock)
    ids.answer = {0: 3}
    await framing.learn()
    ids.fail = True
    clock.now += 1
    await framing.learn(unless_within=0.5)
    assert framing.versions == {3: 0}  # kept
    await framing.learn(unless_within=0.5)  # within 0.5 s of the failure: not asked
    assert ids.asked == 2


async def test_a_version_added_just_after_a_learn_is_learned_when_an_entry_names_it() -> None:
    """A Pulsar producer's new version, named by an entry less than AGAIN_AFTER_S after
    the last learn (a Kafka produce just learned the map): its first sighting asks the
    registry anyway, or the entry would be served unframed for good. A version the
    registry does not show (another type) is asked about only as often as before."""
    ids, clock = Ids(), Clock()
    framing = TopicFraming(ids, TOPIC, refresh_s=5, clock=clock)
    ids.answer = {0: 3}
    await framing.learn()
    ids.answer = {0: 3, 1: 4}  # a typed Pulsar producer added version 1 just now
    clock.now += 0.1
    await framing.learn_for(1)
    assert framing.id_of(1) == 4
    assert ids.asked == 2
    clock.now += 0.1
    await framing.learn_for(2)  # version 2 is a STRING schema: never shown
    await framing.learn_for(2)  # seen and asked about after its sighting: not again soon
    assert (framing.id_of(2), ids.asked) == (None, 3)
    clock.now += 1
    await framing.learn_for(2)  # but still now and then
    assert ids.asked == 4


async def test_readers_that_meet_one_new_version_together_ask_once() -> None:
    ids, clock = Ids(), Clock()
    framing = TopicFraming(ids, TOPIC, refresh_s=5, clock=clock)
    await framing.learn()
    ids.answer = {0: 5}
    ids.gate = asyncio.Event()
    readers = [asyncio.create_task(framing.learn_for(0)) for _ in range(5)]
    for _ in range(5):
        await asyncio.sleep(0)
    ids.gate.set()
    await asyncio.gather(*readers)
    assert (framing.id_of(0), ids.asked) == (5, 2)
