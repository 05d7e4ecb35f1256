"""What a topic's cleanup.policy asks of Pulsar (docs/decisions.md D10).

- `delete`: Pulsar retention is the topic's retention.ms / retention.bytes.
- `compact`: kop serves the live ledgers in full and Pulsar's compacted view
  only below them, so a record leaves the Kafka view only when retention
  deletes its ledger: retention time is the longer of delete.retention.ms (how
  long a tombstone stays visible) and min.compaction.lag.ms (how long any
  record stays uncompacted), and no size limit.
- `compact,delete`: as `delete` for the live ledgers.
- neither (an empty list): nothing expires.
A compacted topic is stored in the `pulsar` entry format: Pulsar compacts by a
message's key, and a `kafka`-format entry is one keyless message holding a
whole batch, which Pulsar's compaction would drop.
"""

from __future__ import annotations

from collections.abc import Mapping

from kop.entries.formats import EntryFormat
from kop.protocol.errors import ErrorCode, KafkaError
from kop.topics.configs import ENTRY_FORMAT

DELETE_RETENTION_MS = 86_400_000  # Kafka's default delete.retention.ms


def compacts(configs: Mapping[str, str]) -> bool:
    return "compact" in configs.get("cleanup.policy", "delete").split(",")


def pulsar_retention(configs: Mapping[str, str]) -> tuple[int, int]:
    """(retention ms, retention bytes) for Pulsar's retention policy."""
    policies = set(configs.get("cleanup.policy", "delete").split(","))
    if "delete" in policies:
        return int(configs["retention.ms"]), int(configs["retention.bytes"])
    if "compact" in policies:
        tombstones = int(configs.get("delete.retention.ms", DELETE_RETENTION_MS))
        lag = int(configs.get("min.compaction.lag.ms", 0))
        return max(tombstones, lag), -1
    return -1, -1


def settle_format(
    merged: dict[str, str], chosen: Mapping[str, str | None], current: EntryFormat | None = None
) -> dict[str, str]:
    """`merged` with the entry format a compacted topic needs: `pulsar` unless the
    client asked for `kafka` (refused), or the topic already holds `kafka` entries
    (refused: compaction would drop them)."""
    if not compacts(merged):
        return merged
    if chosen.get(ENTRY_FORMAT) == EntryFormat.KAFKA.value or current is EntryFormat.KAFKA:
        raise KafkaError(
            ErrorCode.invalid_config,
            "cleanup.policy=compact needs the pulsar entry format: Pulsar compacts by "
            "message key, and a kafka-format entry is one keyless message per batch",
        )
    return {**merged, ENTRY_FORMAT: EntryFormat.PULSAR.value}
