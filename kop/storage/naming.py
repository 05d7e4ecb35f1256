"""Kafka topic names <-> Pulsar topic names.

A Kafka topic `t` is `persistent://{tenant}/{namespace}/t`; a full Pulsar name
is accepted as a Kafka topic name as it is. Partition p of a partitioned topic
is Pulsar's `...-partition-p`; a non-partitioned Pulsar topic is a one-partition
Kafka topic whose partition 0 is the topic itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PREFIX = "persistent://"
_KAFKA_LEGAL = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
_PULSAR_LOCAL_LEGAL = re.compile(r"^[a-zA-Z0-9._=:-]{1,249}$")
# Pulsar's tenant and namespace names (NamedEntity), ASCII only: nothing a REST path
# or a URL decoder could read as another name (`%2F`, `..`).
_PULSAR_NAME_LEGAL = re.compile(r"^[a-zA-Z0-9._=:-]{1,128}$")
PARTITION_SUFFIX = "-partition-"


class InvalidTopicName(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Namespace:
    tenant: str
    namespace: str

    @property
    def path(self) -> str:
        return f"{self.tenant}/{self.namespace}"


@dataclass(frozen=True, slots=True)
class PulsarTopic:
    """A Pulsar topic as seen from Kafka: `kafka_name` is what the client called it."""

    namespace: Namespace
    local: str
    kafka_name: str

    @property
    def full(self) -> str:
        return f"{_PREFIX}{self.namespace.path}/{self.local}"

    @property
    def rest_path(self) -> str:
        return f"persistent/{self.namespace.path}/{self.local}"

    def partition(self, index: int, partitioned: bool = True) -> str:
        return f"{self.full}{PARTITION_SUFFIX}{index}" if partitioned else self.full


def topic_of_partition(partition: str) -> str:
    """The topic a Pulsar partition (`...-partition-p`) belongs to; a non-partitioned
    topic is its own."""
    head, sep, tail = partition.rpartition(PARTITION_SUFFIX)
    return head if sep and tail.isdigit() else partition


def split_full(topic: str) -> tuple[str, str, str]:
    """(tenant, namespace, local name) of a full `persistent://` name."""
    tenant, namespace, local = topic.removeprefix(_PREFIX).split("/", 2)
    return tenant, namespace, local


def resolve(kafka_name: str, default: Namespace) -> PulsarTopic:
    if kafka_name.startswith(_PREFIX):
        parts = kafka_name[len(_PREFIX) :].split("/")
        if (
            len(parts) != 3
            or not all(map(_PULSAR_NAME_LEGAL.match, parts[:2]))
            or not _PULSAR_LOCAL_LEGAL.match(parts[2])
            or any(p in (".", "..") for p in parts)
        ):
            raise InvalidTopicName(f"{kafka_name!r} is not persistent://tenant/namespace/topic")
        return PulsarTopic(Namespace(parts[0], parts[1]), parts[2], kafka_name)
    if not _KAFKA_LEGAL.match(kafka_name) or kafka_name in (".", ".."):
        raise InvalidTopicName(f"{kafka_name!r} is not a legal Kafka topic name")
    if PARTITION_SUFFIX in kafka_name:
        raise InvalidTopicName(f"{kafka_name!r} contains Pulsar's reserved '{PARTITION_SUFFIX}'")
    return PulsarTopic(default, kafka_name, kafka_name)
