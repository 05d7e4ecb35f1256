"""Pulsar admin REST (v2) over aiohttp: the storage port's admin side, plus the
few lookups the message log needs (where a topic ends)."""

from __future__ import annotations

from typing import Any

from kop.pulsar.admin_http import AdminHttp
from kop.pulsar.admin_partitions import PartitionCalls
from kop.pulsar.wire.options import ConnectOptions
from kop.storage.naming import PARTITION_SUFFIX, Namespace, PulsarTopic
from kop.storage.types import AdminError, StorageUnavailable, TopicInfo

# What kop's semantics rest on, as namespace policies a tenant admin may set
# (docs/pulsar.md, "What kop's role needs"):
# - deduplication: kop's producers re-send what was in flight when a connection
#   drops (a topic unload, a broker restart); without it the broker would store
#   those entries twice and every later offset would shift;
# - inactive topics are never deleted: Kafka topics do not vanish because nobody
#   produced or consumed for a while (Pulsar's broker default deletes them).
# Pulsar's media type for a partitioned topic made with its properties in one request.
_TOPIC_METADATA = "application/vnd.partitioned-topic-metadata+json"

NAMESPACE_POLICIES: dict[str, Any] = {
    "deduplication": True,
    "inactiveTopicPolicies": {
        "inactiveTopicDeleteMode": "delete_when_no_subscriptions",
        "maxInactiveDurationSeconds": 60,
        "deleteWhileInactive": False,
    },
}


def _covers(current: Any, wanted: Any) -> bool:
    """True when the policy read back already says what `wanted` says."""
    if isinstance(wanted, dict):
        if not isinstance(current, dict):
            return False
        if "deleteWhileInactive" in wanted:  # only this field of the policy matters
            return current.get("deleteWhileInactive") is False
        return all(current.get(k) == v for k, v in wanted.items())
    return bool(current == wanted)


class PulsarAdmin(PartitionCalls):
    """`http_url` may name several hosts (`http://b1:8080,b2:8080`): a request that
    cannot reach one goes to the next. Credentials and TLS trust are the wire
    client's (`options`), so one setting serves both."""

    def __init__(
        self, http_url: str, timeout_s: float = 30.0, options: ConnectOptions | None = None
    ) -> None:
        self._http = AdminHttp(http_url, timeout_s, options or ConnectOptions())
        self._request = self._http.request
        self.request = self._http.request  # for admin calls kept beside this class
        self._max_message_size: int | None = None

    async def close(self) -> None:
        await self._http.close()

    async def healthy(self) -> bool:
        try:
            return bool(await self._request("GET", "brokers/health") == "ok")
        except (StorageUnavailable, AdminError):
            return False

    async def broker_config(self) -> dict[str, str]:
        result = await self._request("GET", "brokers/configuration/runtime")
        return dict(result or {})

    async def namespaces_of(self, tenant: str) -> list[str] | None:
        """The tenant's namespaces, None when it does not exist."""
        found = await self._request("GET", f"namespaces/{tenant}", ok_missing=True)
        return None if found is None else list(found)

    async def ensure_namespace(self, ns: Namespace) -> None:
        """Asks only what a tenant admin may: the tenant's namespaces. A missing tenant
        is created where kop's role may (a superuser, as on a standalone)."""
        namespaces = await self._request("GET", f"namespaces/{ns.tenant}", ok_missing=True)
        if namespaces is None:
            clusters = await self._request("GET", "clusters")
            await self._request("PUT", f"tenants/{ns.tenant}", {"allowedClusters": clusters})
            namespaces = []
        if ns.path not in namespaces:
            try:
                await self._request("PUT", f"namespaces/{ns.path}", {})
            except AdminError as exc:
                if exc.status != 409:  # made meanwhile by another instance
                    raise

    async def serve_namespace(self, ns: Namespace) -> None:
        """A namespace kop writes Kafka topics into: exists, with the namespace
        policies kop's semantics rest on (never a broker-wide setting)."""
        await self.ensure_namespace(ns)
        for policy, wanted in NAMESPACE_POLICIES.items():
            await self.ensure_policy(ns, policy, wanted)

    async def ensure_policy(
        self, ns: Namespace, policy: str, wanted: Any, method: str = "POST"
    ) -> None:
        """Sets a namespace policy unless it is already as wanted: a platform team may
        have set it for a role that may read policies but not change them."""
        path = f"namespaces/{ns.path}/{policy}"
        try:
            current = await self._request("GET", path, ok_missing=True)
        except AdminError as exc:
            if exc.status != 403:
                raise
            current = None
        if _covers(current, wanted):
            return
        await self._request(method, path, wanted)

    async def configure_system_namespace(self, ns: Namespace, compaction_bytes: int) -> None:
        """kop's own compacted topics: keep everything, compact often."""
        await self.serve_namespace(ns)
        await self.ensure_policy(
            ns, "retention", {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}
        )
        await self.ensure_policy(ns, "compactionThreshold", compaction_bytes, "PUT")

    async def topic_info(self, topic: PulsarTopic) -> TopicInfo | None:
        meta = await self._request("GET", f"{topic.rest_path}/partitions", ok_missing=True)
        partitions = int((meta or {}).get("partitions", 0))
        if partitions > 0:
            return TopicInfo(partitions, dict((meta or {}).get("properties") or {}))
        listed = await self.list_topics(topic.namespace)
        return listed.get(topic.local)

    async def list_topics(self, ns: Namespace) -> dict[str, TopicInfo]:
        """Kafka-visible topics of a namespace: partitioned ones and plain ones."""
        out: dict[str, TopicInfo] = {}
        for name in await self._request("GET", f"persistent/{ns.path}/partitioned") or []:
            local = name.rsplit("/", 1)[-1]
            if not _is_system(local):
                out[local] = TopicInfo(1)  # count filled lazily by topic_info
        for name in await self._request("GET", f"persistent/{ns.path}") or []:
            local = name.rsplit("/", 1)[-1]
            if PARTITION_SUFFIX in local or _is_system(local) or local in out:
                continue
            out[local] = TopicInfo(0)
        return out

    async def count_partitions(self, ns: Namespace) -> int:
        """One call, whatever the namespace holds: Pulsar lists every partition of a
        partitioned topic (created with it) and every non-partitioned topic."""
        names = await self._request("GET", f"persistent/{ns.path}", ok_missing=True) or []
        return sum(1 for name in names if not _is_system(name.rsplit("/", 1)[-1]))

    async def create_partitioned(
        self, topic: PulsarTopic, partitions: int, properties: dict[str, str]
    ) -> None:
        if not properties:
            await self._request("PUT", f"{topic.rest_path}/partitions", partitions)
            return
        # With its properties in one request: made and then given them, an instance
        # starting at the same moment could see the topic without them (issue 33).
        metadata = {"partitions": partitions, "properties": properties}
        await self._request(
            "PUT", f"{topic.rest_path}/partitions", metadata, content_type=_TOPIC_METADATA
        )

    async def update_partitions(self, topic: PulsarTopic, partitions: int) -> None:
        await self._request("POST", f"{topic.rest_path}/partitions", partitions)

    async def update_properties(self, topic: PulsarTopic, properties: dict[str, str]) -> None:
        await self._request("PUT", f"{topic.rest_path}/properties", properties)

    def learn_message_size(self, size: int) -> None:
        """The broker's limit as its CONNECTED told the wire client: reading the
        broker's configuration needs a superuser, which kop's role is not."""
        self._max_message_size = size

    async def message_size_limit(self) -> int:
        """The broker's maxMessageSize (a whole entry: payload and metadata)."""
        if self._max_message_size is None:
            config = await self.broker_config()
            self._max_message_size = int(config.get("maxMessageSize", 5 << 20))
        return self._max_message_size

    async def delete(self, topic: PulsarTopic, partitioned: bool) -> None:
        suffix = "/partitions" if partitioned else ""
        await self._request("DELETE", f"{topic.rest_path}{suffix}?force=true")

    async def set_retention(
        self, topic: PulsarTopic, retention_ms: int, retention_bytes: int
    ) -> None:
        minutes = -1 if retention_ms < 0 else max(1, retention_ms // 60000)
        megabytes = -1 if retention_bytes < 0 else max(1, retention_bytes // (1 << 20))
        await self._request(
            "POST",
            f"{topic.rest_path}/retention",
            {"retentionTimeInMinutes": minutes, "retentionSizeInMB": megabytes},
        )


def _is_system(local: str) -> bool:
    return local.startswith("__")
