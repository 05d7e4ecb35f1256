"""Kafka topic configs kop honours: their defaults, which values a client may set,
and how AlterConfigs / IncrementalAlterConfigs change a topic's set.

They live as Pulsar topic properties (`kafka.<name>`), so they survive restarts
and travel with the topic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kop.log.entry_format import EntryFormat
from kop.protocol.errors import ErrorCode, KafkaError

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
    "cleanup.policy": ("delete", "compact", "compact,delete", "delete,compact"),
    "retention.ms": None,
    "retention.bytes": None,
    "max.message.bytes": None,
    "message.timestamp.type": ("CreateTime",),
    "compression.type": ("producer",),
    "min.insync.replicas": None,
    "delete.retention.ms": None,
    "min.compaction.lag.ms": None,
    ENTRY_FORMAT: tuple(f.value for f in EntryFormat),
    PULSAR_BATCHING: ("true", "false"),
}
_NUMERIC = {
    "retention.ms",
    "retention.bytes",
    "max.message.bytes",
    "min.insync.replicas",
    "delete.retention.ms",
    "min.compaction.lag.ms",
}


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


# IncrementalAlterConfigs operations (KIP-339).
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_LISTS = {"cleanup.policy"}  # list-typed configs: the only ones APPEND/SUBTRACT apply to


def incremental(
    current: Mapping[str, str], defaults: Mapping[str, str], ops: list[tuple[str, int, str | None]]
) -> dict[str, str]:
    """A topic's configs after IncrementalAlterConfigs operations (name, op, value)."""
    out = dict(current)
    for name, op, value in ops:
        if op == SET:
            out[name] = value or ""
        elif op == DELETE:
            if name in defaults:
                out[name] = defaults[name]
            else:
                out.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if name not in _LISTS:
                raise KafkaError(
                    ErrorCode.invalid_config, f"{name} is not a list; APPEND/SUBTRACT need one"
                )
            items = [i for i in out.get(name, "").split(",") if i]
            given = [i for i in (value or "").split(",") if i]
            if op == APPEND:
                items += [i for i in given if i not in items]
            else:
                items = [i for i in items if i not in given]
            out[name] = ",".join(items)
        else:
            raise KafkaError(ErrorCode.invalid_request, f"unknown config operation {op}")
    return out
