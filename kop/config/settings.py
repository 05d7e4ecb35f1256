"""One typed configuration: defaults < TOML file < environment (`KOP_*`) < flags."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from kop.config.pulsar import PulsarSettings
from kop.config.registry import RegistrySettings
from kop.groups.consumer.assignors import ASSIGNORS
from kop.groups.mirror_names import DEFAULT_PREFIX, check_prefix

# `KOP_*` variables that are not kop's settings: the tools that provision Pulsar and
# the reference Kafka, the test and bench harnesses. Any other unknown `KOP_*`
# variable is a typo, refused at start (a mistyped KOP_PULSAR_AUTH_PARAMS would
# otherwise give an unauthenticated kop).
TOOL_ENV = frozenset(
    {
        "KOP_CACHE_DIR",
        "KOP_NATIVE",
        "KOP_NATIVE_FUZZ",
        "KOP_DECODER_FUZZ",
        "KOP_APIS",
        "KOP_ADMIN_URL",
        "KOP_PULSAR",
        "KOP_PULSAR_TOOL",
        "KOP_PULSAR_PORT",
        "KOP_PULSAR_HTTP_PORT",
        "KOP_PULSAR_BOOKIE_PORT",
        "KOP_PULSAR_DATA",
        "KOP_PULSAR_START_TIMEOUT",
        "KOP_PULSAR_STOP_TIMEOUT",
        "KOP_PULSAR_JVM_OPTS",
        "KOP_KAFKA",
    }
)
TOOL_ENV_PREFIXES = ("KOP_KAFKA_", "KOP_MAVEN_", "KOP_SIM_", "KOP_SPARK", "KOP_PULSAR_CLUSTER_")


class ConfigError(Exception):
    """A bad configuration; the message names the setting and what is wrong."""


class KopConfig(PulsarSettings, RegistrySettings):
    model_config = SettingsConfigDict(env_prefix="KOP_", extra="forbid")

    # Several instances (docs/decisions.md D15): each a unique node id (it is part of
    # the producer ids it hands out, hence < 256), alive to the others while its
    # heartbeats are younger than member_ttl_s.
    node_id: int = Field(0, ge=0, le=255)
    cluster_id: str = "kop-cluster"
    heartbeat_interval_s: float = Field(1.0, gt=0)
    member_ttl_s: float = Field(4.0, gt=0)
    # Admin HTTP (/healthz, /readyz, /metrics)
    admin_host: str = "0.0.0.0"
    admin_port: int = Field(9094, ge=0, le=65535)
    # Pulsar
    tenant: str = "public"
    namespace: str = "default"
    system_namespace: str = "public/__kop"
    # Topics
    default_entry_format: Literal["pulsar", "kafka"] = "pulsar"
    default_pulsar_batching: bool = True
    # Whether Pulsar producers may write the topics kop creates (their
    # kop.pulsar.shared.writes): kop takes a partition with a fence and then writes it
    # in Pulsar's Shared mode, holding the fence's epoch (D21); false keeps Pulsar
    # producers out while kop writes (an exclusive producer).
    pulsar_shared_writes: bool = True
    auto_create_topics: bool = True
    default_partitions: int = Field(1, ge=1, le=10000)
    # What clients may create (kop's limits, not Kafka's: docs/decisions.md D3)
    max_partitions_per_topic: int = Field(1000, ge=1, le=1_000_000)
    max_partitions_total: int = Field(10_000, ge=1, le=10_000_000)
    retention_ms: int = Field(7 * 24 * 3600 * 1000, ge=-1)
    retention_bytes: int = Field(-1, ge=-1)
    max_message_bytes: int = Field(1048588, ge=1024)
    # What a produced Kafka batch and a Pulsar entry read back may decompress to
    # (docs/decisions.md D3)
    max_uncompressed_batch_bytes: int = Field(16 * 1024 * 1024, ge=1024 * 1024, le=1 << 31)
    max_uncompressed_entry_bytes: int = Field(64 * 1024 * 1024, ge=1024 * 1024, le=1 << 31)
    write_timeout_s: float = Field(30.0, gt=0)
    fetch_max_wait_cap_ms: int = Field(30000, ge=0)
    fetch_max_bytes_cap: int = Field(55 * 1024 * 1024, ge=1024)  # Kafka's fetch.max.bytes
    open_wait_s: float = Field(5.0, gt=0)
    # Incremental fetch sessions (KIP-227; docs/decisions.md D25): Kafka's
    # max.incremental.fetch.session.cache.slots (0: none) and
    # min.incremental.fetch.session.eviction.ms; kop's own cap of one principal's share.
    max_incremental_fetch_session_cache_slots: int = Field(1000, ge=0)
    min_incremental_fetch_session_eviction_ms: int = Field(120_000, ge=0)
    max_incremental_fetch_sessions_per_principal: int = Field(250, ge=1)
    # Offset index and memory (totals across all partitions)
    checkpoint_interval: int = Field(1000, ge=1)
    max_checkpoints: int = Field(10_000, ge=16)
    tail_buffer_bytes: int = Field(256 * 1024 * 1024, ge=0)
    history_readers: int = Field(64, ge=1)
    history_prefetch: int = Field(100, ge=1, le=100_000)
    max_producers: int = Field(10_000, ge=1)
    max_producers_per_tenant: int = Field(100_000, ge=1)  # across its partitions here
    retention_check_s: float = Field(300.0, gt=0)
    compaction_interval_s: float = Field(60.0, gt=0)
    # Consumer groups (Kafka's broker settings of the same meaning)
    offsets_topic_partitions: int = Field(16, ge=1, le=1000)  # never change it later
    offsets_retention_minutes: int = Field(10080, ge=1)
    group_initial_rebalance_delay_ms: int = Field(3000, ge=0)
    group_min_session_timeout_ms: int = Field(6000, ge=1)
    group_max_session_timeout_ms: int = Field(1_800_000, ge=1)
    group_max_size: int = Field(1000, ge=1)
    # KIP-848 consumer groups (group.protocol=consumer): Kafka's group.consumer.* settings
    group_consumer_session_timeout_ms: int = Field(45_000, ge=1)
    group_consumer_heartbeat_interval_ms: int = Field(5_000, ge=1)
    group_consumer_max_size: int = Field(1000, ge=1)
    group_consumer_assignors: str = "uniform,range"  # the first is the default
    # group.consumer.migration.policy: online conversions between the group protocols
    group_consumer_migration_policy: Literal[
        "disabled", "upgrade", "downgrade", "bidirectional"
    ] = "bidirectional"
    # KIP-932 share groups: Kafka's group.share.* settings, and share.auto.offset.reset
    # (where a share group's new Pulsar subscription starts: D27)
    group_share_session_timeout_ms: int = Field(45_000, ge=1)
    group_share_heartbeat_interval_ms: int = Field(5_000, ge=1)
    group_share_max_size: int = Field(200, ge=1)
    group_share_record_lock_duration_ms: int = Field(30_000, ge=1000, le=3_600_000)
    group_share_delivery_count_limit: int = Field(5, ge=2, le=10)
    group_share_partition_max_record_locks: int = Field(2_000, ge=100, le=10_000)
    group_share_max_share_sessions: int = Field(2_000, ge=1)
    share_auto_offset_reset: Literal["latest", "earliest"] = "latest"
    errors_deadletterqueue_topic_name_prefix: str = Field("dlq.", max_length=249)  # KIP-1191
    errors_deadletterqueue_auto_create_topics_enable: bool = False
    max_groups: int = Field(10_000, ge=1)
    max_groups_per_tenant: int = Field(5_000, ge=1)  # one tenant's share of max_groups
    mirror_subscriptions: bool = True  # committed offsets as Pulsar subscriptions
    mirror_interval_s: float = Field(5.0, gt=0)
    # The mirrored subscription of group g is PREFIX + g; kop touches no other (never
    # a Pulsar application's subscription that shares a group's name).
    group_subscription_prefix: str = DEFAULT_PREFIX
    # Transactions (Kafka's transaction.state.log.num.partitions, transaction.max.timeout.ms,
    # transaction.abort.timed.out.transaction.cleanup.interval.ms)
    transaction_state_partitions: int = Field(16, ge=1, le=1000)  # never change it later
    transaction_max_timeout_ms: int = Field(900_000, ge=1)
    transaction_abort_check_s: float = Field(10.0, gt=0)
    # Start afresh when the offsets or transaction state topic was deleted or replaced
    # under kop (kop.systables.state_topics); without it such a start is refused.
    recreate_lost_state_topics: bool = False
    # Kafka's transactional.id.expiration.ms and its cleanup interval; kop's own cap
    # of the transactional ids one tenant holds on an instance.
    transactional_id_expiration_ms: int = Field(604_800_000, ge=1)
    transaction_remove_expired_transaction_cleanup_interval_ms: int = Field(3_600_000, ge=1)
    max_transactional_ids_per_tenant: int = Field(100_000, ge=1)
    # The transaction.version finalized in ApiVersions (2: KIP-890 part 2; 1: clients
    # keep AddPartitionsToTxn and EndTxn keeps the epoch); the same on every instance.
    transaction_version: Literal[1, 2] = 2
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # plain lines, or one JSON object per line with the connection and request context
    log_format: Literal["plain", "json"] = "plain"
    # The event loop kop serves on: uvloop (libuv) where it is installed, asyncio's own
    # otherwise or when asked (the same code runs on both; docs/decisions.md, D29).
    event_loop: Literal["uvloop", "asyncio"] = "uvloop"

    config_file: Path | None = None

    @field_validator("group_consumer_assignors")
    @classmethod
    def _assignors(cls, v: str) -> str:
        names = [a.strip() for a in v.split(",") if a.strip()]
        unknown = [a for a in names if a not in ASSIGNORS]
        if not names or unknown:
            have = ", ".join(ASSIGNORS)
            raise ValueError(f"{', '.join(unknown) or 'no assignor named'}: kop has {have}")
        return ",".join(names)

    @field_validator("group_consumer_migration_policy", mode="before")
    @classmethod
    def _migration_policy(cls, v: object) -> object:
        return v.strip().lower() if isinstance(v, str) else v  # Kafka reads it in any case

    @field_validator("group_subscription_prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        return check_prefix(v)

    @field_validator("system_namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        if v.count("/") != 1 or not all(v.split("/")):
            raise ValueError("must be tenant/namespace")
        return v

    @model_validator(mode="after")
    def _clients_outside_system(self) -> KopConfig:
        if f"{self.tenant}/{self.namespace}" == self.system_namespace:
            raise ValueError(
                f"tenant/namespace {self.system_namespace} is system_namespace: kop's own "
                "state is never a namespace Kafka clients work in"
            )
        return self

    @model_validator(mode="after")
    def _partition_limits(self) -> KopConfig:
        if not self.default_partitions <= self.max_partitions_per_topic:
            raise ValueError(
                f"default_partitions={self.default_partitions} is above "
                f"max_partitions_per_topic={self.max_partitions_per_topic}"
            )
        if not self.max_partitions_per_topic <= self.max_partitions_total:
            raise ValueError(
                f"max_partitions_per_topic={self.max_partitions_per_topic} is above "
                f"max_partitions_total={self.max_partitions_total}"
            )
        return self

    @model_validator(mode="after")
    def _uncompressed_room(self) -> KopConfig:
        if self.max_uncompressed_batch_bytes < self.max_message_bytes:
            raise ValueError(
                f"max_uncompressed_batch_bytes {self.max_uncompressed_batch_bytes} is below "
                f"max_message_bytes {self.max_message_bytes}: a batch of the largest size "
                "allowed could not be decompressed"
            )
        return self

    @model_validator(mode="after")
    def _liveness(self) -> KopConfig:
        if self.member_ttl_s < 2 * self.heartbeat_interval_s:
            raise ValueError(
                f"member_ttl_s {self.member_ttl_s} is below twice heartbeat_interval_s "
                f"{self.heartbeat_interval_s}: one late heartbeat would drop a live instance"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml = _CONFIG_FILE.get("path")
        if toml is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml))
        return tuple(sources)


_CONFIG_FILE: dict[str, Path] = {}


def unknown_env(environ: Mapping[str, str]) -> list[str]:
    """One line per `KOP_*` variable that is neither a setting nor a tool's, naming
    the nearest setting."""
    known = {f"KOP_{name.upper()}" for name in KopConfig.model_fields}
    lines = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith("KOP_") or upper in known or upper in TOOL_ENV:
            continue
        if upper.startswith(TOOL_ENV_PREFIXES):
            continue
        near = difflib.get_close_matches(upper, known, n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]}?)" if near else ""
        lines.append(f"unknown environment variable {name}{hint}")
    return lines


def load_config(
    config_file: Path | None = None, environ: Mapping[str, str] | None = None, **flags: Any
) -> KopConfig:
    """Build the config; raises ConfigError with one readable line per problem."""
    unknown = unknown_env(os.environ if environ is None else environ)
    if unknown:
        raise ConfigError("; ".join(unknown) + ": every KOP_* variable must be a setting")
    _CONFIG_FILE.clear()
    if config_file is not None:
        if not config_file.is_file():
            raise ConfigError(f"config file {config_file} does not exist")
        _CONFIG_FILE["path"] = config_file
    try:
        return KopConfig(
            config_file=config_file, **{k: v for k, v in flags.items() if v is not None}
        )
    except ValidationError as exc:
        lines = [_problem(err["loc"], err["type"], err["msg"]) for err in exc.errors()]
        raise ConfigError("invalid configuration: " + "; ".join(lines)) from None
    finally:
        _CONFIG_FILE.clear()  # read only by this construction, never by a later KopConfig()


def _problem(loc: tuple[int | str, ...], kind: str, msg: str) -> str:
    """One problem as a line; a setting that does not exist (a mistyped key in the
    TOML file) names the nearest one, as a mistyped `KOP_*` variable does."""
    where = ".".join(str(p) for p in loc) or "config"
    if kind == "extra_forbidden" and loc:
        near = difflib.get_close_matches(str(loc[0]), list(KopConfig.model_fields), n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]}?)" if near else ""
        return f"{where}: no such setting{hint}"
    return f"{where}: {msg}"
