"""Kafka topics over Pulsar partitioned topics: lookup, create, delete, grow.

Kafka topic configs live as Pulsar topic properties (`kafka.<name>`), so they
survive restarts and travel with the topic; retention is also applied as a
Pulsar topic policy, because Pulsar, not kop, deletes data.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from kop.log.entry_format import EntryFormat
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.port import StorageAdmin
from kop.storage.types import AdminError, TopicInfo

PROPERTY_PREFIX = "kafka."
ENTRY_FORMAT = "kop.entry.format"
PULSAR_BATCHING = "kop.pulsar.batching"


@dataclass(frozen=True, slots=True)
class TopicDefaults:
    entry_format: EntryFormat = EntryFormat.PULSAR
    pulsar_batching: bool = True
    partitions: int = 1
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    max_message_bytes: int = 1048588

    def configs(self) -> dict[str, str]:
        return {
            "cleanup.policy": "delete",
            "retention.ms": str(self.retention_ms),
            "retention.bytes": str(self.retention_bytes),
            "max.message.bytes": str(self.max_message_bytes),
            "message.timestamp.type": "CreateTime",
            "compression.type": "producer",
            "min.insync.replicas": "1",
            ENTRY_FORMAT: self.entry_format.value,
            PULSAR_BATCHING: str(self.pulsar_batching).lower(),
        }


# Configs a client may set at creation, with the values kop can honour.
_SETTABLE: dict[str, tuple[str, ...] | None] = {
    "cleanup.policy": ("delete",),
    "retention.ms": None,
    "retention.bytes": None,
    "max.message.bytes": None,
    "message.timestamp.type": ("CreateTime",),
    "compression.type": ("producer",),
    "min.insync.replicas": None,
    ENTRY_FORMAT: tuple(f.value for f in EntryFormat),
    PULSAR_BATCHING: ("true", "false"),
}
_NUMERIC = {"retention.ms", "retention.bytes", "max.message.bytes", "min.insync.replicas"}


@dataclass(frozen=True, slots=True)
class TopicView:
    topic: PulsarTopic
    info: TopicInfo
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        return self.info.kafka_partitions

    def partition_topic(self, index: int) -> str:
        return self.topic.partition(index, self.info.partitioned)

    @property
    def entry_format(self) -> EntryFormat:
        return EntryFormat(self.configs.get(ENTRY_FORMAT, EntryFormat.PULSAR.value))

    @property
    def pulsar_batching(self) -> bool:
        """False: one Pulsar entry per message, so Pulsar's backlog counts records."""
        return self.configs.get(PULSAR_BATCHING, "true") == "true"

    @property
    def max_message_bytes(self) -> int:
        return int(self.configs.get("max.message.bytes", "1048588"))


def validate_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in configs.items():
        if name not in _SETTABLE:
            raise KafkaError(ErrorCode.invalid_config, f"config {name!r} is not supported by kop")
        if value is None:
            continue
        allowed = _SETTABLE[name]
        if allowed is not None and value not in allowed:
            raise KafkaError(
                ErrorCode.invalid_config, f"{name}={value!r}: kop supports {', '.join(allowed)}"
            )
        if name in _NUMERIC:
            try:
                int(value)
            except ValueError:
                raise KafkaError(
                    ErrorCode.invalid_config, f"{name}={value!r} is not a number"
                ) from None
        out[name] = value
    return out


class TopicCatalog:
    def __init__(self, admin: StorageAdmin, defaults: TopicDefaults, ttl_s: float = 5.0) -> None:
        self._admin = admin
        self.defaults = defaults
        self._ttl = ttl_s
        self._cache: dict[str, tuple[float, TopicView | None]] = {}
        self._lock = asyncio.Lock()
        self._served: dict[Namespace, asyncio.Task[None]] = {}

    def invalidate(self, topic: PulsarTopic) -> None:
        self._cache.pop(topic.full, None)

    async def writable(self, topic: PulsarTopic) -> None:
        """Before kop writes into a namespace (its own, or one reached by a full Pulsar
        name), the namespace de-duplicates re-sends: kop names its writes "this
        writer's n-th message", which holds only if each is stored once. Once per
        namespace per process; a failure is retried on the next write."""
        task = self._served.get(topic.namespace)
        if task is None or (task.done() and task.exception() is not None):
            task = asyncio.ensure_future(self._admin.serve_namespace(topic.namespace))
            self._served[topic.namespace] = task
        await asyncio.shield(task)

    async def describe(self, topic: PulsarTopic) -> TopicView | None:
        cached = self._cache.get(topic.full)
        if cached is not None and time.monotonic() - cached[0] < self._ttl:
            return cached[1]
        info = await self._admin.topic_info(topic)
        view = None
        if info is not None:
            props = info.properties
            configs = self.defaults.configs()
            configs.update(
                {
                    k[len(PROPERTY_PREFIX) :]: v
                    for k, v in props.items()
                    if k.startswith(PROPERTY_PREFIX)
                }
            )
            view = TopicView(topic, info, configs)
        self._cache[topic.full] = (time.monotonic(), view)
        return view

    async def create(
        self,
        topic: PulsarTopic,
        partitions: int,
        configs: Mapping[str, str | None],
        validate_only: bool = False,
    ) -> TopicView:
        chosen = validate_configs(configs)
        count = self.defaults.partitions if partitions <= 0 else partitions
        async with self._lock:
            self.invalidate(topic)
            if await self.describe(topic) is not None:
                raise KafkaError(
                    ErrorCode.topic_already_exists, f"topic {topic.kafka_name!r} exists"
                )
            if validate_only:
                return TopicView(topic, TopicInfo(count), {**self.defaults.configs(), **chosen})
            await self.writable(topic)
            merged = {**self.defaults.configs(), **chosen}
            try:
                await self._admin.create_partitioned(
                    topic, count, {PROPERTY_PREFIX + k: v for k, v in merged.items()}
                )
            except AdminError as exc:
                if exc.status == 409:
                    raise KafkaError(ErrorCode.topic_already_exists, str(exc)) from exc
                raise
            await self._admin.set_retention(
                topic, int(merged["retention.ms"]), int(merged["retention.bytes"])
            )
            self.invalidate(topic)
        view = await self.describe(topic)
        if view is None:
            raise KafkaError(
                ErrorCode.unknown_server_error, f"{topic.full} vanished after creation"
            )
        return view

    async def delete(self, topic: PulsarTopic) -> TopicView:
        view = await self.describe(topic)
        if view is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {topic.kafka_name!r}")
        await self._admin.delete(topic, view.info.partitioned)
        self.invalidate(topic)
        return view

    async def add_partitions(self, topic: PulsarTopic, count: int, validate_only: bool) -> None:
        view = await self.describe(topic)
        if view is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {topic.kafka_name!r}")
        if not view.info.partitioned:
            raise KafkaError(
                ErrorCode.invalid_request, f"{topic.full} is a non-partitioned Pulsar topic"
            )
        if count <= view.partitions:
            raise KafkaError(
                ErrorCode.invalid_partitions,
                f"topic has {view.partitions} partitions; {count} would not add any",
            )
        if not validate_only:
            await self._admin.update_partitions(topic, count)
            self.invalidate(topic)

    async def names(self, namespace: Namespace) -> list[str]:
        return sorted(await self._admin.list_topics(namespace))
