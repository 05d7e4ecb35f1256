"""The storage port's admin half in memory, and a backend that hands the whole
gateway (server, handlers, logs) the in-memory storage: for tests that drive
kop end to end through sockets without a Pulsar, where a fault must be injected."""

from __future__ import annotations

from dataclasses import replace
from typing import Generic, TypeVar

from kop.config.settings import KopConfig
from kop.groups.group_config_book import LocalGroupConfigs
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.permissions import NamespaceGrants
from kop.storage.types import AdminError, Cursor, Position, StorageUnavailable, TopicInfo
from tests.sim.memory_compaction import MemoryCompaction
from tests.sim.memory_log import MemoryLog
from tests.sim.memory_schemas import MemoryTopicSchemas
from tests.sim.memory_shared import MemorySubscription

K = TypeVar("K")


class MemoryAdmin:
    def __init__(self, log: MemoryLog) -> None:
        self._log = log
        self.topics: dict[str, TopicInfo] = {}
        self.served: set[Namespace] = set()
        self.retention: dict[str, tuple[int, int]] = {}
        # Partitions kop still had a reader or writer on when it deleted their
        # topic: Pulsar would cut those clients off and they would retry.
        self.held_at_delete: list[str] = []
        # Durable subscriptions by (partition topic, name): where each one is.
        self.cursors: dict[tuple[str, str], Position | None] = {}
        self.counted = 0  # count_partitions calls: what the partition budget costs

    def _up(self) -> None:
        if self._log.down:
            raise StorageUnavailable("storage admin unreachable")

    async def healthy(self) -> bool:
        return not self._log.down

    async def topic_info(self, topic: PulsarTopic) -> TopicInfo | None:
        self._up()
        return self.topics.get(topic.full)

    async def list_topics(self, ns: Namespace) -> dict[str, TopicInfo]:
        self._up()
        prefix = f"persistent://{ns.path}/"
        return {k[len(prefix) :]: v for k, v in self.topics.items() if k.startswith(prefix)}

    async def count_partitions(self, ns: Namespace) -> int:
        self._up()
        self.counted += 1
        return sum(info.kafka_partitions for info in (await self.list_topics(ns)).values())

    async def serve_namespace(self, ns: Namespace) -> None:
        self._up()
        self.served.add(ns)

    async def create_partitioned(
        self, topic: PulsarTopic, partitions: int, properties: dict[str, str]
    ) -> None:
        self._up()
        if topic.full in self.topics:
            raise AdminError(409, f"{topic.full} exists")
        self.topics[topic.full] = TopicInfo(partitions, dict(properties))

    async def update_partitions(self, topic: PulsarTopic, partitions: int) -> None:
        self._up()
        old = self.topics[topic.full]
        self.topics[topic.full] = TopicInfo(partitions, old.properties)

    async def update_properties(self, topic: PulsarTopic, properties: dict[str, str]) -> None:
        self._up()
        old = self.topics[topic.full]
        self.topics[topic.full] = TopicInfo(old.partitions, {**old.properties, **properties})

    async def stored_bytes(self, topic: str) -> int:
        self._up()
        return sum(len(m.payload) for m in self._log.topic(topic).messages())

    async def message_size_limit(self) -> int:
        return 5 << 20  # Pulsar's default maxMessageSize

    async def delete(self, topic: PulsarTopic, partitioned: bool) -> None:
        self._up()
        if self.topics.pop(topic.full, None) is None:
            raise AdminError(404, f"{topic.full} not found")
        prefix = topic.full + "-partition-" if partitioned else topic.full
        held = {n for n in self._log.writers if n.startswith(prefix)}
        held |= {n for n, t in self._log.topics.items() if n.startswith(prefix) and t.readers}
        self.held_at_delete += sorted(held)

    async def create_subscription(self, topic: str, name: str, at: Position | None) -> bool:
        self._up()
        if name in self._log.topic(topic).shared or (topic, name) in self.cursors:
            return False
        await self.place_subscription(topic, name, at)
        return True

    async def place_subscription(self, topic: str, name: str, at: Position | None) -> None:
        """One subscription namespace per partition, as on Pulsar: a Shared
        subscription of that name (a share group's) is moved too, and what its
        consumers held goes back to it."""
        self._up()
        self.cursors[(topic, name)] = at
        t = self._log.topic(topic)
        entries = t.entries()
        if at is not None:
            start = at.entry_key
        elif entries:
            last = entries[-1].position
            start = (last.ledger, last.entry + 1)
        else:
            start = (0, 0)
        sub = t.shared.get(name)
        if sub is None:
            t.shared[name] = MemorySubscription(t, start)
            return
        sub.start = start
        sub.acked.clear()
        sub.out.clear()
        sub.redeliveries.clear()
        t.wake()

    async def delete_subscription(self, topic: str, name: str) -> None:
        self._up()
        self.cursors.pop((topic, name), None)
        self._log.topic(topic).shared.pop(name, None)

    async def subscriptions(self, topic: str) -> list[str]:
        self._up()
        shared = set(self._log.topics[topic].shared) if topic in self._log.topics else set()
        return sorted({name for t, name in self.cursors if t == topic} | shared)

    async def cursor(self, topic: str, name: str) -> Cursor | None:
        """As Pulsar keeps it: the last entry of the run acknowledged from the start,
        then the entries acknowledged beyond it, one range each."""
        self._up()
        t = self._log.topics.get(topic)
        keys = [e.position.entry_key for e in t.entries()] if t is not None else []
        sub = t.shared.get(name) if t is not None else None
        if sub is not None:
            mark = (sub.start[0], sub.start[1] - 1)
            beyond = []
            run = True
            for key in keys:
                if key < sub.start:
                    continue
                if run and key in sub.acked:
                    mark = key
                    continue
                run = False
                if key in sub.acked:
                    beyond.append(((key[0], key[1] - 1), key))
            return Cursor(mark, tuple(beyond))
        if (topic, name) not in self.cursors:
            return None
        at = self.cursors[(topic, name)]
        if at is not None:
            return Cursor((at.ledger, at.entry - 1))
        return Cursor(keys[-1] if keys else (0, -1))

    async def set_retention(
        self, topic: PulsarTopic, retention_ms: int, retention_bytes: int
    ) -> None:
        self._up()
        self.retention[topic.full] = (retention_ms, retention_bytes)


class MemoryPermissions:
    """Pulsar's auth_policies and tenant admins, as the Pulsar admin API keeps them."""

    def __init__(self) -> None:
        self.namespaces: dict[Namespace, NamespaceGrants] = {}
        self.admins: dict[str, frozenset[str]] = {"public": frozenset()}
        self.reads = 0

    async def namespace_grants(self, ns: Namespace) -> NamespaceGrants | None:
        self.reads += 1
        return self.namespaces.get(ns, NamespaceGrants())

    async def tenant_admins(self, tenant: str) -> frozenset[str] | None:
        return self.admins.get(tenant)

    async def grant(
        self, ns: Namespace, topic: str | None, role: str, actions: frozenset[str]
    ) -> None:
        g = self.namespaces.get(ns, NamespaceGrants())
        if topic is None:
            namespace = {**g.namespace, role: actions}
            self.namespaces[ns] = replace(g, namespace={k: v for k, v in namespace.items() if v})
        else:
            on = {**g.topics.get(topic, {}), role: actions}
            topics = {**g.topics, topic: {k: v for k, v in on.items() if v}}
            self.namespaces[ns] = replace(g, topics=topics)

    async def set_subscription_roles(
        self, ns: Namespace, subscription: str, roles: frozenset[str]
    ) -> None:
        g = self.namespaces.get(ns, NamespaceGrants())
        subs = {**g.subscriptions, subscription: roles}
        self.namespaces[ns] = replace(g, subscriptions={k: v for k, v in subs.items() if v})


class MemoryRecords(Generic[K]):
    """Namespace properties, as the Pulsar admin API keeps them (credentials, quotas)."""

    def __init__(self) -> None:
        self.records: dict[K, str] = {}

    async def load(self) -> dict[K, str]:
        return dict(self.records)

    async def save(self, key: K, record: str) -> None:
        self.records[key] = record

    async def delete(self, key: K) -> None:
        self.records.pop(key, None)


MemoryCredentials = MemoryRecords[tuple[str, str]]


class MemoryBackend:
    def __init__(self, log: MemoryLog | None = None) -> None:
        self.log = log or MemoryLog()
        self.admin = MemoryAdmin(self.log)
        self.compaction = MemoryCompaction(self.log)
        self.permissions = MemoryPermissions()
        self.credentials = MemoryCredentials()
        self.quotas = MemoryRecords[str]()
        self.group_configs = LocalGroupConfigs()
        self.schemas = MemoryTopicSchemas(self.log)

    async def prepare(self, config: KopConfig) -> MemoryLog:
        return self.log

    def instance(self) -> MemoryBackend:
        """Another kop process over the same Pulsar: connections (writers, readers)
        of its own; the same topics, subscriptions and admin state."""
        other = MemoryBackend(self.log.instance())
        other.admin, other.compaction = self.admin, self.compaction
        other.permissions, other.credentials = self.permissions, self.credentials
        other.quotas, other.group_configs = self.quotas, self.group_configs
        other.schemas = self.schemas
        return other

    async def close(self) -> None:
        await self.log.close()
