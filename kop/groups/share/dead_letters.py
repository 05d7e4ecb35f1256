"""A share group's dead letters (KIP-1191, which Kafka's release after 4.3 adds): a
record a member rejects, or one archived after its last allowed delivery, is written
to the topic the group's `errors.deadletterqueue.topic.name` names before Pulsar is
told the record is done with, so a record is never archived without its letter
(unless the letter cannot be written: then, as Kafka, it is archived and the failure
logged).

A letter is a record of the dead-letter topic, in partition `source partition % its
partitions`, with Kafka's headers naming the source topic, partition and offset, the
group, the delivery count and the cause; with the source record's key and value only
where the group's `errors.deadletterqueue.copy.record.enable` says so. The topic is a
Pulsar topic like any other of kop's: Pulsar consumers read the letters too.

This module makes the letters; where they go, and the checks Kafka makes of the topic
first, are the sink's (kop.api.dead_letter_writes), which writes through the
dead-letter partition's leader as any produce does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kop.groups.share.records import Dead
from kop.log.counting import LogEntry
from kop.protocol.records import Record, iter_batches

log = logging.getLogger(__name__)

HEADER_TOPIC = "__dlq.errors.topic"
HEADER_PARTITION = "__dlq.errors.partition"
HEADER_OFFSET = "__dlq.errors.offset"
HEADER_GROUP = "__dlq.errors.group"
HEADER_DELIVERY_COUNT = "__dlq.errors.delivery.count"
HEADER_MESSAGE = "__dlq.errors.message"


@dataclass(frozen=True, slots=True)
class DeadLetterPolicy:
    """The group's dead-letter settings, as of its last fetch."""

    group_key: str  # the group as kop keys it (its tenant's)
    group_id: str  # as its members name it
    topic: str = ""  # errors.deadletterqueue.topic.name; empty: no letters
    copy: bool = False  # errors.deadletterqueue.copy.record.enable


@dataclass(frozen=True, slots=True)
class DeadLetters:
    """Letters for one dead-letter topic, from one source partition."""

    policy: DeadLetterPolicy
    source_topic: str  # the source partition's topic, as the group's members name it
    source_partition: int
    records: tuple[Record, ...]  # offsets 0.. (the leader gives them theirs)


class DeadLetterError(Exception):
    """The letters were not written; the message says why, in Kafka's words where
    Kafka has them."""


class DeadLetterSink(Protocol):
    async def write(self, letters: DeadLetters) -> None:
        """Done once the dead-letter partition's leader has written every letter;
        DeadLetterError otherwise."""
        ...


def letters(
    policy: DeadLetterPolicy,
    source_topic: str,
    source_partition: int,
    dead: Sequence[Dead],
    sources: Mapping[int, Record],
    now_ms: int | None = None,
) -> DeadLetters:
    """The letters of `dead`, stamped now (a dead-letter topic's retention runs from
    when the letter was written, as Kafka stamps it); each with the source record's
    key and value where the policy copies them and the record is in `sources`."""
    stamp = int(time.time() * 1000) if now_ms is None else now_ms
    out = []
    for i, d in enumerate(dead):
        source = sources.get(d.offset) if policy.copy else None
        headers = (
            (HEADER_TOPIC, source_topic.encode()),
            (HEADER_PARTITION, str(source_partition).encode()),
            (HEADER_OFFSET, str(d.offset).encode()),
            (HEADER_GROUP, policy.group_id.encode()),
            (HEADER_DELIVERY_COUNT, str(d.count).encode()),
            (HEADER_MESSAGE, d.cause.value.encode()),
        )
        out.append(
            Record(
                offset=i,
                timestamp=stamp,
                key=source.key if source is not None else None,
                value=source.value if source is not None else None,
                headers=headers,
            )
        )
    return DeadLetters(policy, source_topic, source_partition, tuple(out))


async def send_letters(
    policy: DeadLetterPolicy, sink: DeadLetterSink | None, source: tuple[str, int],
    dead: Sequence[Dead], held: Mapping[int, LogEntry],
) -> None:  # fmt: skip
    """The letters of `dead` records of partition `source` (topic, index), whose entries
    are in `held` by base offset, to the sink, where the group has a dead-letter topic.
    Not written (the topic refused, its leader away past the sink's retries): the records
    are archived all the same, as Kafka archives them, and it is logged."""
    if not policy.topic or sink is None:
        return
    sources: dict[int, Record] = {}
    if policy.copy:
        for base in {d.base for d in dead}:
            item = held.get(base)
            if item is not None:
                sources.update((r.offset, r) for r in iter_batches(bytes(item.entry.data)))
    name, index = source
    try:
        await sink.write(letters(policy, name, index, dead, sources))
    except DeadLetterError as exc:
        log.warning(
            "share group %s: %d dead letters of %s-%d not written to %s: %s",
            policy.group_id, len(dead), name, index, policy.topic, exc,
        )  # fmt: skip
