"""`__consumer_offsets` as Kafka clients expect to see it.

Kafka lists its offsets topic in Metadata as internal, and regex subscriptions
and tools skip it because of that flag. kop's offsets topic is a Pulsar topic of
its own format in the system namespace, so kop lists `__consumer_offsets` with
that topic's partition count, and answers what Kafka answers to a client that
may not touch it: TOPIC_AUTHORIZATION_FAILED for reads and admin calls. Where
Kafka refuses every client (produce: INVALID_TOPIC_EXCEPTION; create:
TOPIC_ALREADY_EXISTS), kop gives Kafka's answer.
"""

from __future__ import annotations

import uuid

from kop.protocol.errors import ErrorCode, KafkaError

OFFSETS_TOPIC = "__consumer_offsets"
# Stable across restarts and instances (Kafka's is random, chosen at creation).
OFFSETS_TOPIC_ID = uuid.uuid5(uuid.NAMESPACE_URL, "kop:" + OFFSETS_TOPIC)


def is_internal(name: str | None) -> bool:
    return name == OFFSETS_TOPIC


def refuse_access(name: str) -> None:
    """Raise what Kafka answers a client not allowed on the topic, if it is internal."""
    if is_internal(name):
        raise KafkaError(
            ErrorCode.topic_authorization_failed,
            f"{name} is kop's offsets topic; its records are not served",
        )


def refuse_produce(name: str) -> None:
    if is_internal(name):
        raise KafkaError(
            ErrorCode.invalid_topic_exception, f"Cannot append to internal topic {name}"
        )


def refuse_create(name: str) -> None:
    if is_internal(name):
        raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
