"""Kafka topic configs on kop: their defaults, validation as Kafka validates them,
and how AlterConfigs / IncrementalAlterConfigs change a topic's set.

They live as Pulsar topic properties (`kafka.<name>`), so they survive restarts
and travel with the topic. Which configs exist and what each does on kop is in
`config_defs`; the value grammar and Kafka's messages in `config_types`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kop.entries.formats import EntryFormat
from kop.protocol.errors import ErrorCode, KafkaError
from kop.topics.config_defs import TOPIC_CONFIGS
from kop.topics.config_types import ConfigType, canonical, parse

PROPERTY_PREFIX = "kafka."
ENTRY_FORMAT = "kop.entry.format"
PULSAR_BATCHING = "kop.pulsar.batching"
# true: kop writes the topic in Pulsar's Shared mode, so Pulsar producers may write it
# too, at the cost of the fence between kop instances (docs/decisions.md D15).
SHARED_WRITES = "kop.pulsar.shared.writes"
# KIP-1191 (after Kafka 4.3): a topic takes a share group's dead letters only if its
# own config says so (kop.groups.share.dead_letters). Described only where set, so a
# topic's description is Kafka 4.3's otherwise.
DLQ_ENABLE = "errors.deadletterqueue.group.enable"
# false: values in Confluent's framing pass through as they are, instead of being stored
# bare in the topic's Pulsar schema version and framed again when read (issue 38).
SCHEMA_FRAMING = "kop.schema.registry.framing"
SHOWN_WHEN_SET = frozenset({DLQ_ENABLE})
# The names a client set explicitly (DescribeConfigs reports them as the topic's own,
# also when equal to the default, as Kafka does).
EXPLICIT = "kop.configs.explicit"

# kop's own per-topic settings (not Kafka's; Kafka calls them unknown).
KOP_CONFIGS: dict[str, tuple[str, ...]] = {
    ENTRY_FORMAT: tuple(f.value for f in EntryFormat),
    PULSAR_BATCHING: ("true", "false"),
    SHARED_WRITES: ("true", "false"),
    DLQ_ENABLE: ("true", "false"),
    SCHEMA_FRAMING: ("true", "false"),
}
KOP_TYPES = {
    ENTRY_FORMAT: ConfigType.STRING,
    PULSAR_BATCHING: ConfigType.BOOLEAN,
    SHARED_WRITES: ConfigType.BOOLEAN,
    DLQ_ENABLE: ConfigType.BOOLEAN,
    SCHEMA_FRAMING: ConfigType.BOOLEAN,
}


@dataclass(frozen=True, slots=True)
class TopicDefaults:
    entry_format: EntryFormat = EntryFormat.PULSAR
    pulsar_batching: bool = True
    partitions: int = 1
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    max_message_bytes: int = 1048588
    shared_writes: bool = True  # Pulsar producers beside kop (D21); kop's setting

    def configs(self) -> dict[str, str]:
        """Every topic config at its default (Kafka's, or kop's configured one)."""
        out = {name: d.default for name, d in TOPIC_CONFIGS.items()}
        out.update(
            {
                "retention.ms": str(self.retention_ms),
                "retention.bytes": str(self.retention_bytes),
                "max.message.bytes": str(self.max_message_bytes),
                ENTRY_FORMAT: self.entry_format.value,
                PULSAR_BATCHING: str(self.pulsar_batching).lower(),
                SHARED_WRITES: str(self.shared_writes).lower(),
                DLQ_ENABLE: "false",
                SCHEMA_FRAMING: "true",
            }
        )
        return out


# Kept as properties of every topic kop creates: they decide how its data is
# stored, so a later change of kop's defaults does not change an existing topic.
FROZEN = ("retention.ms", "retention.bytes", "max.message.bytes", ENTRY_FORMAT, PULSAR_BATCHING)


def validate_configs(
    configs: Mapping[str, str | None], defaults: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The configs in Kafka's canonical form, or INVALID_CONFIG with Kafka's message
    for the first bad one. `defaults` complete the set for the checks across configs."""
    out: dict[str, str] = {}
    for name, value in configs.items():
        if name in KOP_CONFIGS:
            allowed = KOP_CONFIGS[name]
            if name == DLQ_ENABLE and value is not None:
                value = value.strip().lower()  # Kafka's config: read as Kafka reads a boolean
            if value not in allowed:
                raise KafkaError(
                    ErrorCode.invalid_config, f"{name}={value!r}: kop supports {', '.join(allowed)}"
                )
            out[name] = value
            continue
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise KafkaError(ErrorCode.invalid_config, f"Unknown topic config name: {name}")
        if value is None:
            raise KafkaError(
                ErrorCode.invalid_config, f"Null value not supported for topic configs: {name}"
            )
        parsed = parse(definition.type, name, value)
        if definition.validator is not None:
            definition.validator(name, parsed)
        out[name] = canonical(definition.type, parsed)
    _check_together({**(defaults or {}), **out}, out)
    return out


def _check_together(effective: Mapping[str, str], given: Mapping[str, str]) -> None:
    """What Kafka checks across configs, and what kop refuses of Kafka's values."""
    low = effective.get("min.compaction.lag.ms")
    high = effective.get("max.compaction.lag.ms")
    if low is not None and high is not None and int(low) > int(high):
        raise KafkaError(
            ErrorCode.invalid_config,
            f"conflict topic config setting min.compaction.lag.ms ({low}) > "
            f"max.compaction.lag.ms ({high})",
        )
    if given.get("remote.storage.enable") == "true":
        raise KafkaError(
            ErrorCode.invalid_config,
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage.",
        )


def config_type(name: str) -> ConfigType:
    definition = TOPIC_CONFIGS.get(name)
    return definition.type if definition is not None else KOP_TYPES.get(name, ConfigType.STRING)


# IncrementalAlterConfigs operations (KIP-339).
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def incremental(
    explicit: Mapping[str, str],
    defaults: Mapping[str, str],
    ops: Iterable[tuple[str, int, str | None]],
) -> dict[str, str]:
    """A topic's explicitly set configs after IncrementalAlterConfigs operations
    (name, op, value): SET and DELETE (back to the default) any config, APPEND and
    SUBTRACT list items. The result is validated by the caller, as a whole."""
    out = dict(explicit)
    for name, op, value in ops:
        if op == SET:
            if value is None:
                raise KafkaError(
                    ErrorCode.invalid_request, f"Null value not supported for : {name}"
                )
            out[name] = value
        elif op == DELETE:
            out.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if config_type(name) != ConfigType.LIST:
                raise KafkaError(
                    ErrorCode.invalid_config,
                    f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST.",
                )
            current = out.get(name, defaults.get(name, ""))
            items = [i for i in current.split(",") if i]
            given = [i for i in (value or "").split(",") if i]
            if op == APPEND:
                items += [i for i in given if i not in items]
            else:
                items = [i for i in items if i not in given]
            out[name] = ",".join(items)
        else:
            raise KafkaError(ErrorCode.unknown_server_error, f"unknown config operation {op}")
    return out
