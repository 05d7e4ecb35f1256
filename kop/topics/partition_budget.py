"""How many partitions clients may still make: `max_partitions_per_topic` and
`max_partitions_total` (kop's limits; Kafka has none), and Kafka's own cap on
the partitions one CreateTopics asks for. Every breach is POLICY_VIOLATION with
a message that names the setting (docs/decisions.md D3).

The total is over the namespaces kop serves: its own, and every namespace a
client created a topic in since kop started (a full Pulsar name or a SASL
namespace reaches others). A namespace is counted from Pulsar in one call,
again once its count is older than `ttl_s`, and kop's own creations and
deletions move the count in between. The catalog checks and creates under one
lock, so two requests to one kop cannot both take the last room.
"""

from __future__ import annotations

import asyncio
import time

from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.naming import Namespace
from kop.storage.port import StorageAdmin

# Kafka's controller refuses a CreateTopics asking for more partitions than this
# in all (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH), whatever its config.
MAX_PARTITIONS_PER_REQUEST = 10_000
PER_REQUEST_MESSAGE = "Excessively large number of partitions per request."


def over(message: str) -> KafkaError:
    return KafkaError(ErrorCode.policy_violation, message)


class PartitionBudget:
    def __init__(
        self,
        admin: StorageAdmin,
        per_topic: int,
        total: int,
        home: Namespace,
        ttl_s: float = 30.0,
    ) -> None:
        self._admin = admin
        self.per_topic = per_topic
        self.total = total
        self._ttl = ttl_s
        self._namespaces: set[Namespace] = {home}
        self._counts: dict[Namespace, tuple[float, int]] = {}

    def check_topic(self, name: str, partitions: int) -> None:
        if partitions > self.per_topic:
            raise over(
                f"{partitions} partitions for topic {name!r}: this gateway allows at most "
                f"{self.per_topic} per topic (max_partitions_per_topic)"
            )

    async def check_total(self, ns: Namespace, adding: int, reserved: int = 0) -> None:
        """Room for `adding` more partitions in `ns`, beside `reserved` ones this
        request validated without creating them (validate_only)."""
        held = await self.held(ns)
        if held + reserved + adding > self.total:
            taken = f"{held} exist" + (f", {reserved} validated before" if reserved else "")
            raise over(
                f"{adding} more partitions would pass this gateway's limit of {self.total} "
                f"in total (max_partitions_total): {taken}"
            )

    async def held(self, also: Namespace | None = None) -> int:
        """Partitions in the namespaces served (and in `also`, not served yet)."""
        spaces = self._namespaces | ({also} if also is not None else set())
        return sum(await asyncio.gather(*(self._count(ns) for ns in spaces)))

    def check_request(self, requested: int) -> None:
        """Kafka's own cap on one CreateTopics, before any topic is looked at."""
        if requested > MAX_PARTITIONS_PER_REQUEST:
            raise over(PER_REQUEST_MESSAGE)

    def moved(self, ns: Namespace, delta: int) -> None:
        """kop created (+) or deleted (-) partitions in `ns`: served from now on."""
        self._namespaces.add(ns)
        counted = self._counts.get(ns)
        if counted is not None:
            self._counts[ns] = (counted[0], max(0, counted[1] + delta))

    async def _count(self, ns: Namespace) -> int:
        """Only served namespaces are remembered: probing others costs a call each
        time, never memory."""
        counted = self._counts.get(ns)
        if counted is not None and time.monotonic() - counted[0] < self._ttl:
            return counted[1]
        count = await self._admin.count_partitions(ns)
        if ns in self._namespaces:
            self._counts[ns] = (time.monotonic(), count)
        return count
