"""Per-group configs (Kafka's GroupConfig, `kafka-configs --entity-type groups`): the
ones kop honours, their bounds and their broker-wide defaults, and what one group's
overrides make of them.

Kafka 4.3 takes 21 names. kop takes the nine it applies (the KIP-848 consumer
protocol's session and heartbeat, and the share groups'), and the two of KIP-1191's
dead-letter queue that Kafka's next release adds, and refuses the others with
INVALID_CONFIG naming why, rather than storing a setting that would change nothing:
streams groups (KIP-1071) are not served, the assignors run inline (no offload and no
assignment interval), and share groups read uncommitted only. The bounds are Kafka's
defaults for the broker-level minimum and maximum of each
(`group.consumer.min.session.timeout.ms`, ...)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kop.groups.consumer.coordinator import ConsumerSettings
from kop.groups.share.coordinator import ShareSettings
from kop.groups.share.reset import EARLIEST, LATEST, duration_ms, reset_value
from kop.protocol.errors import ErrorCode, KafkaError

CONSUMER_SESSION = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT = "consumer.heartbeat.interval.ms"
SHARE_SESSION = "share.session.timeout.ms"
SHARE_HEARTBEAT = "share.heartbeat.interval.ms"
SHARE_LOCK = "share.record.lock.duration.ms"
SHARE_DELIVERIES = "share.delivery.count.limit"
SHARE_LOCKS = "share.partition.max.record.locks"
SHARE_RESET = "share.auto.offset.reset"
SHARE_RENEW = "share.renew.acknowledge.enable"
# KIP-1191's dead-letter queue, after Kafka 4.3 (kop.groups.share.dead_letters)
DLQ_TOPIC = "errors.deadletterqueue.topic.name"
DLQ_COPY = "errors.deadletterqueue.copy.record.enable"

BOOLEANS = ("true", "false")


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    low: int | None  # an int config's bounds (inclusive); None: a string config
    high: int | None
    synonym: str | None  # the broker-wide setting that is its default
    doc: str
    floor: int = 1  # below it the value is not one of its kind at all (Kafka's ConfigDef)
    choices: tuple[str, ...] = ()  # a string config's values (an int config: none)

    @property
    def kind(self) -> str:
        """Its type as DescribeConfigs names it."""
        if self.low is not None:
            return "INT"
        return "BOOLEAN" if self.choices == BOOLEANS else "STRING"

    def bound(self, which: str) -> str:
        """The broker setting holding the low or high bound (`min` or `max`), as Kafka's
        messages name it: group.share.delivery.count.limit -> group.share.min.delivery..."""
        kind, _, rest = (self.synonym or "").removeprefix("group.").partition(".")
        return f"group.{kind}.{which}.{rest}"


DEFS: dict[str, GroupConfigDef] = {
    d.name: d
    for d in (
        GroupConfigDef(CONSUMER_SESSION, 45_000, 60_000, "group.consumer.session.timeout.ms",
                       "The timeout to detect client failures when using the consumer group "
                       "protocol."),
        GroupConfigDef(CONSUMER_HEARTBEAT, 5_000, 15_000, "group.consumer.heartbeat.interval.ms",
                       "The heartbeat interval given to the members of a consumer group."),
        GroupConfigDef(SHARE_SESSION, 45_000, 60_000, "group.share.session.timeout.ms",
                       "The timeout to detect client failures when using the share group "
                       "protocol."),
        GroupConfigDef(SHARE_HEARTBEAT, 5_000, 15_000, "group.share.heartbeat.interval.ms",
                       "The heartbeat interval given to the members of a share group."),
        GroupConfigDef(SHARE_LOCK, 15_000, 60_000, "group.share.record.lock.duration.ms",
                       "The record acquisition lock duration in milliseconds for share "
                       "groups.", floor=1000),
        GroupConfigDef(SHARE_DELIVERIES, 2, 10, "group.share.delivery.count.limit",
                       "The maximum number of delivery attempts for a record delivered to a "
                       "share group.", floor=2),
        GroupConfigDef(SHARE_LOCKS, 100, 4_000, "group.share.partition.max.record.locks",
                       "Share-group record lock limit per share-partition.", floor=100),
        GroupConfigDef(SHARE_RESET, None, None, None,
                       "The strategy to initialize the share-partition start offset: "
                       "earliest, latest or by_duration:<duration> (kop: where a new "
                       "subscription of the group starts).",
                       choices=(LATEST, EARLIEST)),
        GroupConfigDef(SHARE_RENEW, None, None, None,
                       "Whether the renew acknowledge type is enabled for the share group.",
                       choices=BOOLEANS),
        GroupConfigDef(DLQ_TOPIC, None, None, None,
                       "The topic the share group's rejected records, and those past the "
                       "delivery count limit, are written to (empty: none; KIP-1191)."),
        GroupConfigDef(DLQ_COPY, None, None, None,
                       "Whether a dead-letter record carries the key and value of the "
                       "record it names (KIP-1191).", choices=BOOLEANS),
    )
}  # fmt: skip

# Kafka 4.3's other group configs, and why kop refuses each
NOT_HONOURED = {
    "consumer.assignment.interval.ms": "kop computes a consumer group's assignment at once",
    "consumer.assignor.offload.enable": "kop runs the assignors inline",
    "share.assignment.interval.ms": "kop computes a share group's assignment at once",
    "share.assignor.offload.enable": "kop runs the assignors inline",
    "share.isolation.level": "kop's share groups read uncommitted records only",
    **{
        f"streams.{name}": "kop serves no streams groups (KIP-1071)"
        for name in (
            "session.timeout.ms", "heartbeat.interval.ms", "num.standby.replicas",
            "initial.rebalance.delay.ms", "assignment.interval.ms", "assignor.offload.enable",
        )
    },
}  # fmt: skip

MAX_VALUE_CHARS = 64  # a value longer than any valid one is refused unread


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """One group's settings: its overrides over the broker-wide defaults."""

    consumer_session_ms: int
    consumer_heartbeat_ms: int
    share_session_ms: int
    share_heartbeat_ms: int
    share_lock_ms: int
    share_delivery_limit: int
    share_max_locks: int
    share_reset: str  # share.auto.offset.reset: earliest, latest or by_duration:<duration>
    share_renew: bool = True  # share.renew.acknowledge.enable (no broker-wide synonym)
    dlq_topic: str = ""  # errors.deadletterqueue.topic.name (empty: no dead-letter topic)
    dlq_copy: bool = False  # errors.deadletterqueue.copy.record.enable

    @property
    def share_earliest(self) -> bool:
        return self.share_reset == EARLIEST

    @property
    def share_reset_ms(self) -> int | None:
        """A by_duration reset's duration (None: earliest or latest)."""
        return duration_ms(self.share_reset)

    def values(self) -> dict[str, str]:
        """By Kafka's names, as DescribeConfigs reports them."""
        return {
            CONSUMER_SESSION: str(self.consumer_session_ms),
            CONSUMER_HEARTBEAT: str(self.consumer_heartbeat_ms),
            SHARE_SESSION: str(self.share_session_ms),
            SHARE_HEARTBEAT: str(self.share_heartbeat_ms),
            SHARE_LOCK: str(self.share_lock_ms),
            SHARE_DELIVERIES: str(self.share_delivery_limit),
            SHARE_LOCKS: str(self.share_max_locks),
            SHARE_RESET: self.share_reset,
            SHARE_RENEW: "true" if self.share_renew else "false",
            DLQ_TOPIC: self.dlq_topic,
            DLQ_COPY: "true" if self.dlq_copy else "false",
        }

    def overridden(self, overrides: Mapping[str, str]) -> GroupSettings:
        """These settings with a group's (already checked) overrides applied."""
        v = {**self.values(), **overrides}
        return GroupSettings(
            int(v[CONSUMER_SESSION]), int(v[CONSUMER_HEARTBEAT]), int(v[SHARE_SESSION]),
            int(v[SHARE_HEARTBEAT]), int(v[SHARE_LOCK]), int(v[SHARE_DELIVERIES]),
            int(v[SHARE_LOCKS]), v[SHARE_RESET], v[SHARE_RENEW] == "true", v[DLQ_TOPIC],
            v[DLQ_COPY] == "true",
        )  # fmt: skip


def broker_wide(consumer: ConsumerSettings, share: ShareSettings) -> GroupSettings:
    """What a group without overrides gets: kop's group_consumer_* and group_share_*."""
    return GroupSettings(
        consumer.session_timeout_ms, consumer.heartbeat_interval_ms, share.session_timeout_ms,
        share.heartbeat_interval_ms, share.record_lock_duration_ms, share.delivery_count_limit,
        share.partition_max_record_locks,
        EARLIEST if share.auto_offset_reset_earliest else LATEST,
    )  # fmt: skip


def checked(overrides: Mapping[str, str]) -> dict[str, str]:
    """A group's overrides, each name known and honoured and each value in its bounds
    (INVALID_CONFIG, with Kafka's messages, otherwise); values normalized."""
    out = {}
    for name, value in overrides.items():
        d = DEFS.get(name)
        if d is None:
            why = NOT_HONOURED.get(name)
            if why is None:
                raise KafkaError(ErrorCode.invalid_config, f"Unknown group config name: {name}")
            raise KafkaError(ErrorCode.invalid_config, f"{name} is not supported: {why}")
        out[name] = _value(d, value)
    return out


def _value(d: GroupConfigDef, value: str) -> str:
    text = value.strip()
    if d.choices == BOOLEANS:
        if text.lower() not in BOOLEANS:
            raise KafkaError(
                ErrorCode.invalid_config,
                f"Invalid value {text[:MAX_VALUE_CHARS]} for configuration {d.name}: Expected "
                "value to be either true or false",
            )
        return text.lower()
    if d.name == DLQ_TOPIC:
        return _topic_name(text)
    if d.low is None or d.high is None:
        reset = reset_value(text) if len(text) <= MAX_VALUE_CHARS else None
        if reset is None:
            shown = text[:MAX_VALUE_CHARS]
            raise KafkaError(
                ErrorCode.invalid_config,
                f"Invalid value {shown} for configuration {d.name}: Invalid value `{shown}` for "
                f"configuration {d.name}. The value must be either 'earliest', 'latest' or of "
                "the format 'by_duration:<PnDTnHnMn.nS>'.",
            )
        return reset
    try:
        if len(text) > MAX_VALUE_CHARS:
            raise ValueError
        number = int(text)
    except ValueError:
        raise KafkaError(
            ErrorCode.invalid_config,
            f"Invalid value {text[:MAX_VALUE_CHARS]} for configuration {d.name}: Not a number "
            "of type INT",
        ) from None
    if number < d.floor:
        raise KafkaError(
            ErrorCode.invalid_config,
            f"Invalid value {number} for configuration {d.name}: Value must be at least {d.floor}",
        )
    if number < d.low:
        raise KafkaError(
            ErrorCode.invalid_config,
            f"{d.name} must be greater than or equal to {d.bound('min')}",
        )
    if number > d.high:
        raise KafkaError(
            ErrorCode.invalid_config, f"{d.name} must be less than or equal to {d.bound('max')}"
        )
    return str(number)


_TOPIC_LEGAL = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def _topic_name(text: str) -> str:
    """A dead-letter topic's name: empty (none), or a legal Kafka topic name (Kafka's
    other rules, the prefix and `__`, are checked as a record is written, as Kafka
    checks them: they may change after the group's config is set)."""
    if text and not _TOPIC_LEGAL.fullmatch(text):
        raise KafkaError(
            ErrorCode.invalid_config,
            f"Invalid value {text[:MAX_VALUE_CHARS]} for configuration {DLQ_TOPIC}: not a legal "
            "topic name (at most 249 of ASCII letters, digits, '.', '_' and '-')",
        )
    return text
