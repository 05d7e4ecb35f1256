"""Pulsar's durable Shared subscriptions in memory (the storage port's
SharedSubscriptions): each entry of the topic goes to one consumer at a time, stays
until acknowledged, comes back after a release (counted) or when its consumer
leaves (not counted, as on Pulsar: tests/integration/test_pulsar_shared.py). No
prefetch: an entry is given out when a consumer asks for one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kop.storage.types import Delivered, StaleDelivery, StorageError

if TYPE_CHECKING:
    from tests.sim.memory_log import MemoryTopic

Key = tuple[int, int]


class MemorySubscription:
    def __init__(self, topic: MemoryTopic, start: Key) -> None:
        self.topic = topic
        self.start = start  # entries below it were never the subscription's
        self.acked: set[Key] = set()
        self.out: dict[Key, MemoryShared] = {}
        self.redeliveries: Counter[Key] = Counter()

    def next_for(self, consumer: MemoryShared) -> Delivered | None:
        for entry in self.topic.entries():
            key = entry.position.entry_key
            if key < self.start or key in self.acked or key in self.out:
                continue
            self.out[key] = consumer
            return Delivered(entry.position, self.redeliveries[key], consumer.epoch)
        return None

    def backlog(self) -> list[Key]:
        """Entries not acknowledged yet, delivered or not."""
        return [
            e.position.entry_key
            for e in self.topic.entries()
            if e.position.entry_key >= self.start and e.position.entry_key not in self.acked
        ]


class MemoryShared:
    def __init__(self, sub: MemorySubscription) -> None:
        self.sub = sub
        self.epoch = 1
        self.closed = False

    async def receive(self) -> Delivered:
        while True:
            if self.closed:
                raise StorageError("consumer is closed", retriable=False)
            got = self.sub.next_for(self)
            if got is not None:
                return got
            await self.sub.topic.changed()

    def _mine(self, deliveries: Sequence[Delivered]) -> list[Key]:
        keys = []
        for d in deliveries:
            key = d.position.entry_key
            if d.epoch != self.epoch or self.sub.out.get(key) is not self:
                raise StaleDelivery(f"{key} came on an attachment now gone")
            keys.append(key)
        return keys

    async def ack(self, deliveries: Sequence[Delivered]) -> None:
        for key in self._mine(deliveries):
            del self.sub.out[key]
            self.sub.acked.add(key)

    def release(self, deliveries: Sequence[Delivered]) -> None:
        for d in deliveries:
            key = d.position.entry_key
            if d.epoch == self.epoch and self.sub.out.get(key) is self:
                del self.sub.out[key]
                self.sub.redeliveries[key] += 1
        self.sub.topic.wake()

    def reattach(self) -> None:
        """The connection dropped and came back: what it held went back, uncounted."""
        self._give_back()
        self.epoch += 1

    async def close(self) -> None:
        self.closed = True
        self._give_back()

    def _give_back(self) -> None:
        for key in [k for k, c in self.sub.out.items() if c is self]:
            del self.sub.out[key]
        self.sub.topic.wake()
