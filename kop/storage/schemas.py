"""What the Schema Registry (kop/registry) needs of Pulsar's own schema registry: a
topic's schema history, uploads that Pulsar checks for compatibility, and the
compatibility strategies of a topic and of a namespace.

It is a storage port (kop/pulsar/schemas.py implements it over Pulsar's admin REST,
tests/sim/memory_schemas.py in memory), so it sits here: kop/pulsar may import
kop/storage, never the registry above it (docs/architecture.md).

A subject `<topic>-value` holding an Avro schema is that Pulsar topic's schema, so
the REST API and a Pulsar producer with a typed schema see one history and one
strategy. Pulsar numbers a topic's versions from 0; the registry shows version v+1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kop.storage.naming import Namespace, PulsarTopic

# Pulsar's SchemaCompatibilityStrategy names the registry maps onto (no UNDEFINED:
# an unset policy is None).
STRATEGIES = frozenset(
    {
        "ALWAYS_INCOMPATIBLE",
        "ALWAYS_COMPATIBLE",
        "BACKWARD",
        "FORWARD",
        "FULL",
        "BACKWARD_TRANSITIVE",
        "FORWARD_TRANSITIVE",
        "FULL_TRANSITIVE",
    }
)


@dataclass(frozen=True, slots=True)
class PulsarSchema:
    """One version of a topic's schema, as Pulsar's admin API shows it."""

    version: int  # Pulsar's, from 0
    type: str  # Pulsar's SchemaType name: AVRO, JSON, PROTOBUF_NATIVE, STRING, ...
    data: str  # the schema text as uploaded (for AVRO: the Avro schema's JSON)
    timestamp_ms: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)


class SchemaRefused(Exception):
    """Pulsar refused an upload; `incompatible` tells the two reasons apart (HTTP 409:
    the topic's strategy refuses it; else 422: not a schema Pulsar accepts)."""

    def __init__(self, message: str, *, incompatible: bool) -> None:
        super().__init__(message)
        self.incompatible = incompatible


class TopicSchemas(Protocol):
    """Pulsar's schema registry, per topic (a partitioned topic has one history)."""

    async def history(self, topic: PulsarTopic) -> list[PulsarSchema]:
        """The versions since the last delete, oldest first ([]: none)."""
        ...

    async def upload(self, topic: PulsarTopic, type_: str, data: str) -> int:
        """The version `data` has in the topic's history: an equal schema's (for AVRO and
        JSON: equal as parsed Avro, whatever the spacing or docs), else a new one's.
        Raises SchemaRefused. The topic need not exist (Pulsar keeps the history by
        name); its namespace must (else AdminError 404)."""
        ...

    async def delete(self, topic: PulsarTopic) -> None:
        """Every version gone (Pulsar's delete: a tombstone that takes a version number
        of its own, even with no history, and the next upload continues the numbers)."""
        ...

    async def topic_strategy(self, topic: PulsarTopic) -> str | None:
        """The topic's own strategy policy (None: not set)."""
        ...

    async def set_topic_strategy(self, topic: PulsarTopic, strategy: str | None) -> None:
        """Set (None: remove) the topic's own strategy policy. The topic must exist
        (Pulsar: AdminError 404); a name outside STRATEGIES is a ValueError (Pulsar
        would store it as unset without a word)."""
        ...

    async def namespace_strategy(self, ns: Namespace) -> str | None:
        """The namespace's strategy policy (None: not set, the broker's applies)."""
        ...

    async def set_namespace_strategy(self, ns: Namespace, strategy: str | None) -> None:
        """Set (None: back to unset) the namespace's strategy policy; a name outside
        STRATEGIES is a ValueError, as for a topic."""
        ...

    async def broker_strategy(self) -> str:
        """The broker's `schemaCompatibilityStrategy` (FULL unless configured)."""
        ...


@dataclass(frozen=True, slots=True)
class FramedAs:
    """How Confluent's framing names one version of a topic's schema: its id, and the
    bytes a framed value carries after the id (Protobuf's message indexes, which name
    the message of the file: b"\x00" for the first; empty for Avro and JSON)."""

    id: int
    tail: bytes = b""


class SchemaIds(Protocol):
    """The Schema Registry's ids of a topic's schema versions (kop/registry serves them),
    for the partitions that put Confluent's framing on and off (kop.log.framing)."""

    async def ids(
        self, topic: PulsarTopic, *, fresh: bool = False, from_pulsar: bool = False
    ) -> dict[int, FramedAs]:
        """Pulsar schema version -> its framing, of each version of the topic's schema
        the registry shows ({}: none); ids are handed out for versions that had none. Unless
        `from_pulsar`, a topic whose schema the registry never saw is answered {}
        without asking Pulsar (no Kafka producer can have framed records in it);
        `fresh`: what other instances registered up to now is seen."""
        ...
