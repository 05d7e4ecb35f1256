"""Client drivers: each runs one unmodified Kafka client library or tool."""

from __future__ import annotations

from conformance.clients.aiokafka_client import AioKafka
from conformance.clients.base import Client
from conformance.clients.go_clients import FranzGo, Sarama
from conformance.clients.java_tools import JavaTools
from conformance.clients.kafka_python import KafkaPython
from conformance.clients.kafkajs import KafkaJS
from conformance.clients.kcat import Kcat
from conformance.clients.librdkafka import ConfluentKafka

# Client libraries driven through the Client protocol (base.py): every scenario
# written against that protocol runs with each of them.
LIBRARIES: tuple[str, ...] = (
    "confluent-kafka",
    "kafka-python",
    "aiokafka",
    "franz-go",
    "sarama",
    "kafkajs",
    "kcat",
)


class Raw:
    """Exact frames: the scenario opens its own RawClient (conformance/clients/raw.py)."""

    name = "raw"
    codecs: tuple[str, ...] = ()


DRIVERS: dict[str, Client | Raw | JavaTools] = {
    c.name: c
    for c in (
        ConfluentKafka(),
        KafkaPython(),
        AioKafka(),
        FranzGo(),
        Sarama(),
        KafkaJS(),
        Kcat(),
        Raw(),
        JavaTools(),
    )
}
