"""Bytes and records each partition took in (Produce) and gave out (Fetch) through this
instance since it started: the per-topic counters a dashboard shows (Kafka's
BytesInPerSec, BytesOutPerSec and MessagesInPerSec by topic; KoP had them too).

Kept when a partition moves to another instance, so a topic's counter never goes down
here (the other instance counts from then on); forgotten when its topic is deleted.
Two additions per produce or fetch of a partition; grouped by topic only when scraped."""

from __future__ import annotations

from dataclasses import dataclass

from kop.storage.naming import topic_of_partition


@dataclass(slots=True)
class Flow:
    bytes_in: int = 0
    records_in: int = 0
    bytes_out: int = 0
    records_out: int = 0

    def add(self, other: Flow) -> None:
        self.bytes_in += other.bytes_in
        self.records_in += other.records_in
        self.bytes_out += other.bytes_out
        self.records_out += other.records_out


class Traffic:
    def __init__(self) -> None:
        self._partitions: dict[str, Flow] = {}

    def flow(self, partition: str) -> Flow:
        """The partition's counters, to add to (one look-up when it is opened)."""
        found = self._partitions.get(partition)
        if found is None:
            found = self._partitions[partition] = Flow()
        return found

    def forget(self, partitions: list[str]) -> None:
        for p in partitions:
            self._partitions.pop(p, None)

    def by_topic(self) -> dict[str, Flow]:
        """Each topic's counters (the Pulsar topic's full name), its partitions summed."""
        out: dict[str, Flow] = {}
        for partition, flow in self._partitions.items():
            total = out.get(topic := topic_of_partition(partition))
            if total is None:
                total = out[topic] = Flow()
            total.add(flow)
        return out
