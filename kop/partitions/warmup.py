"""Opening the partitions this instance gained, before any client asks.

Partitions open on first use. After a takeover that made every gained partition
wait for a client's request to name it, and Kafka clients name them slowly:
librdkafka sends one partition per Produce request and at most five requests in
flight per broker, each answered only once its partition is open, so a new owner
opened some ten partitions a second (a third of 1,000 partitions were served again
12-34 s after a kill). A Kafka leader is ready when it is elected; so here, when the
live instances change, the partitions this instance now owns that another process
last took (the leader-epoch table names who took each) are opened at once, a few
side by side. A partition nobody ever served stays closed until it is used."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from kop.aio.futures import side_by_side
from kop.partitions.manager import LogManager
from kop.protocol.errors import KafkaError
from kop.storage.naming import InvalidTopicName, Namespace, resolve
from kop.storage.types import AdminError, StorageError
from kop.topics.catalog import TopicCatalog

log = logging.getLogger(__name__)

SIDE_BY_SIDE = 16
_PARTITION = re.compile(r"^(.*)-partition-(\d+)$")


def topic_and_index(partition_topic: str) -> tuple[str, int]:
    """The topic a Pulsar partition belongs to, and its index (a non-partitioned
    topic is its own partition 0)."""
    found = _PARTITION.match(partition_topic)
    return (found[1], int(found[2])) if found else (partition_topic, 0)


async def open_gained(partitions: Iterable[str], logs: LogManager, catalog: TopicCatalog) -> None:
    wanted = [p for p in partitions if logs.owns(p) and not logs.is_open(p)]
    if not wanted:
        return
    log.info("opening %d partitions this instance now owns", len(wanted))

    async def one(partition: str) -> None:
        name, index = topic_and_index(partition)
        try:
            view = await catalog.describe(resolve(name, Namespace("", "")))
            if view is None or view.partition_topic(index) != partition:
                return  # deleted meanwhile, or not a partition kop serves
            if logs.owns(partition):
                await logs.of_topic(view, index)
        except (KafkaError, StorageError, AdminError, InvalidTopicName) as exc:
            # still opening (it goes on), or moved on: a client's request retries it
            log.debug("opening %s ahead of its clients: %s", partition, exc)

    await side_by_side((one(p) for p in wanted), SIDE_BY_SIDE)
