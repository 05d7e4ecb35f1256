"""Kafka topics over Pulsar partitioned topics: lookup, create, alter, delete, grow.

Retention is also applied as a Pulsar topic policy, because Pulsar, not kop,
deletes data. The configs themselves are in configs.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from kop.entries.formats import EntryFormat
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.naming import Namespace, PulsarTopic, resolve
from kop.storage.port import StorageAdmin
from kop.storage.types import AdminError, TopicInfo
from kop.topics.cleanup_policy import pulsar_retention, settle_format
from kop.topics.configs import (
    ENTRY_FORMAT,
    EXPLICIT,
    FROZEN,
    PROPERTY_PREFIX,
    PULSAR_BATCHING,
    SHARED_WRITES,
    TopicDefaults,
    validate_configs,
)
from kop.topics.lookups import Lookups
from kop.topics.partition_budget import PartitionBudget

__all__ = ["TopicCatalog", "TopicDefaults", "TopicView", "validate_configs"]

# A topic's Kafka id, chosen at creation (a recreated topic gets a new one).
TOPIC_ID = "kop.topic.id"

# Room for Pulsar's per-entry metadata above a Kafka batch of max.message.bytes.
ENTRY_METADATA_ALLOWANCE = 64 * 1024


@dataclass(frozen=True, slots=True)
class TopicView:
    topic: PulsarTopic
    info: TopicInfo
    configs: dict[str, str] = field(default_factory=dict)
    # The configs a client set (DescribeConfigs: DYNAMIC_TOPIC_CONFIG), with their values.
    explicit: dict[str, str] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        return self.info.kafka_partitions

    def partition_topic(self, index: int) -> str:
        return self.topic.partition(index, self.info.partitioned)

    @property
    def topic_id(self) -> uuid.UUID:
        """The id kop gave the topic at creation; for a topic kop did not create (a
        Pulsar client's), one derived from its Pulsar name, stable across restarts."""
        given = self.info.properties.get(TOPIC_ID)
        if given:
            with contextlib.suppress(ValueError):
                return uuid.UUID(given)
        return uuid.uuid5(uuid.NAMESPACE_URL, self.topic.full)

    @property
    def entry_format(self) -> EntryFormat:
        """Read on every produce, through a cache by the stored text (an enum lookup
        per produce was measurable), and only when asked: a malformed value (a Pulsar
        admin can set the property) fails what reads it, not every lookup of the topic."""
        return _entry_format(self.configs.get(ENTRY_FORMAT, EntryFormat.PULSAR.value))

    @property
    def pulsar_batching(self) -> bool:
        """False: one Pulsar entry per message, so Pulsar's backlog counts records."""
        return self.configs.get(PULSAR_BATCHING, "true") == "true"

    @property
    def shared_writes(self) -> bool:
        """True: kop's writer takes the partition with a fence, then leaves room for
        Pulsar producers (D21); false keeps them out while kop writes. For the topics
        kop creates, kop's `pulsar_shared_writes` decides unless the topic says; the
        others are shared."""
        return self.configs.get(SHARED_WRITES, "false") == "true"

    @property
    def compacted(self) -> bool:
        """cleanup.policy holds `compact` (alone or with `delete`)."""
        return "compact" in self.configs.get("cleanup.policy", "delete").split(",")

    @property
    def compacted_expire_ms(self) -> int | None:
        """`compact,delete`: what compaction kept also expires after retention.ms."""
        policies = self.configs.get("cleanup.policy", "delete").split(",")
        ms = int(self.configs.get("retention.ms", "-1"))
        return ms if "compact" in policies and "delete" in policies and ms >= 0 else None

    @property
    def max_message_bytes(self) -> int:
        return int(self.configs.get("max.message.bytes", "1048588"))

    @property
    def log_append_time(self) -> bool:
        return self.configs.get("message.timestamp.type") == "LogAppendTime"


@functools.lru_cache(maxsize=64)
def _entry_format(value: str) -> EntryFormat:
    return EntryFormat(value)


MISSING_TTL_S = 0.5
_AS_NAMED_MAX = 10_000


class TopicCatalog:
    def __init__(
        self,
        admin: StorageAdmin,
        defaults: TopicDefaults,
        budget: PartitionBudget,
        ttl_s: float = 5.0,
        max_read_bytes: int = 64 << 20,
    ) -> None:
        self._admin = admin
        self._max_read_bytes = max_read_bytes
        self.defaults = defaults
        self.budget = budget
        # By full Pulsar name: `t` and `persistent://public/default/t` are one topic.
        # A topic created through another instance is unknown here for at most
        # MISSING_TTL_S after this one last looked (Kafka's brokers learn of it in ms).
        self._views: Lookups[str, TopicView | None] = Lookups(
            self._view, ttl_s, missing_ttl_s=MISSING_TTL_S
        )
        self._names: Lookups[Namespace, list[str]] = Lookups(self._list, ttl_s, 1000)
        self._lock = asyncio.Lock()
        self._served: dict[Namespace, asyncio.Task[None]] = {}
        # A view as a caller names the topic (`t` for `persistent://public/default/t`),
        # kept while the view it was made from is the current one: made per produce, it
        # cost a dataclass copy each time.
        self._as_named: dict[PulsarTopic, tuple[TopicView, TopicView]] = {}

    def invalidate(self, topic: PulsarTopic) -> None:
        self._views.forget(topic.full)
        self._names.forget(topic.namespace)

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
        view = await self._views.get(topic.full)
        if view is not None and view.topic != topic:  # as this caller names it
            named = self._as_named.get(topic)
            if named is None or named[0] is not view:
                if len(self._as_named) >= _AS_NAMED_MAX:
                    self._as_named.clear()  # names a client chose: bounded
                named = (view, replace(view, topic=topic))
                self._as_named[topic] = named
            return named[1]
        return view

    async def _view(self, full_name: str) -> TopicView | None:
        topic = resolve(full_name, Namespace("", ""))
        info = await self._admin.topic_info(topic)
        view = None
        if info is not None:
            defaults = self.defaults.configs()
            if TOPIC_ID not in info.properties:
                # A topic kop did not create is a Pulsar application's first: kop writes
                # it beside the application's producers unless told otherwise (D15).
                defaults[SHARED_WRITES] = "true"
            stored = stored_configs(info.properties)
            view = TopicView(
                topic, info, {**defaults, **stored}, explicit_of(info, stored, defaults)
            )
        return view

    async def create(
        self,
        topic: PulsarTopic,
        partitions: int,
        configs: Mapping[str, str | None],
        validate_only: bool = False,
        reserved: int = 0,
    ) -> TopicView:
        """`reserved`: partitions the same request validated before without creating
        them (validate_only), which count against the total as if created."""
        defaults = self.defaults.configs()
        chosen = validate_configs(configs, defaults)
        merged = settle_format({**defaults, **chosen}, configs)
        self._check_storable(merged)
        count = self.defaults.partitions if partitions <= 0 else partitions
        async with self._lock:
            self.invalidate(topic)
            if await self.describe(topic) is not None:
                raise KafkaError(
                    ErrorCode.topic_already_exists, f"topic {topic.kafka_name!r} exists"
                )
            self.budget.check_topic(topic.kafka_name, count)
            await self.budget.check_total(topic.namespace, count, reserved)
            if validate_only:
                return TopicView(topic, TopicInfo(count), merged, chosen)
            await self.writable(topic)
            try:
                properties = _properties(merged, chosen, ())
                properties[TOPIC_ID] = str(uuid.uuid4())
                await self._admin.create_partitioned(topic, count, properties)
            except AdminError as exc:
                if exc.status == 409:
                    raise KafkaError(ErrorCode.topic_already_exists, str(exc)) from exc
                raise
            self.budget.moved(topic.namespace, count)
            await self._admin.set_retention(topic, *pulsar_retention(merged))
            self.invalidate(topic)
        view = await self.describe(topic)
        if view is None:
            raise KafkaError(
                ErrorCode.unknown_server_error, f"{topic.full} vanished after creation"
            )
        return view

    async def alter(
        self, topic: PulsarTopic, configs: Mapping[str, str | None], validate_only: bool
    ) -> None:
        """Make `configs` the topic's set (what is not in it reverts to its default),
        as AlterConfigs does; IncrementalAlterConfigs computes the set first."""
        view = await self.describe(topic)
        if view is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {topic.kafka_name!r}")
        defaults = self.defaults.configs()
        chosen = validate_configs(configs, defaults)
        merged = settle_format({**defaults, **chosen}, configs, view.entry_format)
        self._check_storable(merged)
        if validate_only:
            return
        async with self._lock:
            before = stored_configs(view.info.properties)
            await self._admin.update_properties(topic, _properties(merged, chosen, before))
            await self._admin.set_retention(topic, *pulsar_retention(merged))
            self.invalidate(topic)

    def _check_storable(self, configs: Mapping[str, str]) -> None:
        """A record or batch larger than Pulsar's maxMessageSize is stored in chunks,
        which a reader puts together up to `max_uncompressed_entry_bytes`: a topic
        must not promise more than kop can read back."""
        limit = self._max_read_bytes - ENTRY_METADATA_ALLOWANCE
        if int(configs["max.message.bytes"]) > limit:
            raise KafkaError(
                ErrorCode.invalid_config,
                f"max.message.bytes={configs['max.message.bytes']} is above what kop reads "
                f"back ({limit}: max_uncompressed_entry_bytes less metadata room)",
            )

    async def delete(self, topic: PulsarTopic) -> TopicView:
        view = await self.describe(topic)
        if view is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {topic.kafka_name!r}")
        await self._admin.delete(topic, view.info.partitioned)
        self.invalidate(topic)
        self.budget.moved(topic.namespace, -view.partitions)
        return view

    async def add_partitions(
        self, topic: PulsarTopic, count: int, validate_only: bool, reserved: int = 0
    ) -> int:
        """Grow the topic to `count` partitions; returns how many that adds (also when
        only validated). `reserved` as for `create`."""
        async with self._lock:
            self.invalidate(topic)
            view = await self.describe(topic)
            if view is None:
                raise KafkaError(
                    ErrorCode.unknown_topic_or_partition, f"no topic {topic.kafka_name!r}"
                )
            if not view.info.partitioned:
                raise KafkaError(
                    ErrorCode.invalid_request, f"{topic.full} is a non-partitioned Pulsar topic"
                )
            if count <= view.partitions:
                raise KafkaError(
                    ErrorCode.invalid_partitions,
                    f"topic has {view.partitions} partitions; {count} would not add any",
                )
            added = count - view.partitions
            self.budget.check_topic(topic.kafka_name, count)
            await self.budget.check_total(topic.namespace, added, reserved)
            if not validate_only:
                await self._admin.update_partitions(topic, count)
                self.budget.moved(topic.namespace, added)
                self.invalidate(topic)
            return added

    async def stored_bytes(self, partition_topic: str) -> int:
        return await self._admin.stored_bytes(partition_topic)

    async def names(self, namespace: Namespace, fresh: bool = False) -> list[str]:
        """The namespace's topics, as listed at most `ttl_s` ago; `fresh`: listed now (a
        topic created through another instance is in it at once)."""
        if fresh:
            self._names.forget(namespace)
        return await self._names.get(namespace)

    async def _list(self, namespace: Namespace) -> list[str]:
        return sorted(await self._admin.list_topics(namespace))


def stored_configs(properties: Mapping[str, str]) -> dict[str, str]:
    return {
        k[len(PROPERTY_PREFIX) :]: v for k, v in properties.items() if k.startswith(PROPERTY_PREFIX)
    }


def explicit_of(
    info: TopicInfo, stored: Mapping[str, str], defaults: Mapping[str, str]
) -> dict[str, str]:
    """The configs a client set. Topics from before kop recorded that stored every
    config; of those, the ones that differ from the default."""
    named = info.properties.get(EXPLICIT)
    if named is None:
        return {k: v for k, v in stored.items() if defaults.get(k) != v}
    return {k: stored[k] for k in named.split(",") if k in stored}


def _properties(
    merged: Mapping[str, str], chosen: Mapping[str, str], before: Iterable[str]
) -> dict[str, str]:
    """What to write: the chosen configs, the frozen ones, and the default value of any
    stored before (Pulsar merges properties; that is how a config goes back)."""
    names = set(chosen) | set(FROZEN) | set(before)
    out = {PROPERTY_PREFIX + k: merged[k] for k in sorted(names) if k in merged}
    out[EXPLICIT] = ",".join(sorted(chosen))
    return out
