"""Every topic config Kafka 4.3.1 accepts: its type, default, validation, broker
synonym, and what it does on kop.

Streams, Connect, schema registries and other tools create topics with configs
that only mean something to Kafka's own storage (segment sizes, flush
intervals, replica throttles). Kafka accepts them, so kop does too: each config
is honoured by kop, mapped to a Pulsar policy, or accepted, validated and
reported with no effect. The table in docs/compatibility.md is made from this
catalogue (`effect_table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kop.topics.config_types import (
    ConfigType,
    OneOf,
    Range,
    Validator,
    gzip_level,
    throttled_replicas,
)

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")


class Effect(StrEnum):
    HONOURED = "honoured"
    MAPPED = "mapped to Pulsar"
    NONE = "accepted, no effect"


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    name: str
    type: ConfigType
    default: str
    effect: Effect
    doc: str  # what it does on kop (DescribeConfigs' documentation)
    validator: Validator | None = None
    # Kafka's broker-wide counterparts, listed as synonyms after the topic's own value.
    synonyms: tuple[str, ...] = ()


def _d(
    name: str,
    kind: ConfigType,
    default: str,
    effect: Effect,
    doc: str,
    validator: Validator | None = None,
    synonym: str | None = None,
) -> TopicConfigDef:
    return TopicConfigDef(
        name, kind, default, effect, doc, validator, () if synonym is None else (synonym,)
    )


B, S, INT, L, D, LI = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)
H, M, N = Effect.HONOURED, Effect.MAPPED, Effect.NONE
_PULSAR_STORES = "Pulsar's ledgers and BookKeeper decide this on kop"
_ONE_BROKER = "kop is one broker and Pulsar replicates; no effect on kop"
_TIERED = "Pulsar's offload is its tiered storage; no effect on kop"
_COMPACTION = (
    "validated; on a compacted topic it changes only when Pulsar compacts, which no client "
    "sees: compaction shows when retention deletes the live ledgers (D10)"
)

_DEFS = (
    _d("cleanup.policy", LI, "delete", M,
       "delete: time and size retention, as the Pulsar retention policy; compact: Pulsar's "
       "compaction, served at the original offsets (D10)", OneOf(CLEANUP_POLICIES),
       "log.cleanup.policy"),
    _d("compression.type", S, "producer", H,
       "the codec batches are stored and served in: producer keeps the producer's; any other "
       "is applied by kop on produce, as Kafka's broker recompresses",
       OneOf(COMPRESSION_TYPES), "compression.type"),
    _d("compression.gzip.level", INT, "-1", H, "the level kop compresses at for "
       "compression.type=gzip", gzip_level, "compression.gzip.level"),
    _d("compression.lz4.level", INT, "9", H, "the level kop compresses at for "
       "compression.type=lz4", Range(1, 17), "compression.lz4.level"),
    _d("compression.zstd.level", INT, "3", H, "the level kop compresses at for "
       "compression.type=zstd", Range(-131072, 22), "compression.zstd.level"),
    _d("delete.retention.ms", L, "86400000", M, "how long tombstones are kept: on a compacted "
       "topic the Pulsar retention time is at least this (D10)",
       Range(0), "log.cleaner.delete.retention.ms"),
    _d("file.delete.delay.ms", L, "60000", N, _PULSAR_STORES, Range(0),
       "log.segment.delete.delay.ms"),
    _d("flush.messages", L, str(LONG_MAX), N, f"Pulsar persists every entry; {_PULSAR_STORES}",
       Range(1), "log.flush.interval.messages"),
    _d("flush.ms", L, str(LONG_MAX), N, f"Pulsar persists every entry; {_PULSAR_STORES}",
       Range(0)),
    _d("follower.replication.throttled.replicas", LI, "", N, _ONE_BROKER, throttled_replicas),
    _d("index.interval.bytes", INT, "4096", N, "kop keeps its own offset index", Range(0),
       "log.index.interval.bytes"),
    _d("leader.replication.throttled.replicas", LI, "", N, _ONE_BROKER, throttled_replicas),
    _d("local.retention.bytes", L, "-2", N, _TIERED, Range(-2), "log.local.retention.bytes"),
    _d("local.retention.ms", L, "-2", N, _TIERED, Range(-2), "log.local.retention.ms"),
    _d("max.compaction.lag.ms", L, str(LONG_MAX), N, _COMPACTION, Range(1),
       "log.cleaner.max.compaction.lag.ms"),
    _d("max.message.bytes", INT, "1048588", H,
       "the largest record batch a producer may send (MESSAGE_TOO_LARGE past it)", Range(0),
       "message.max.bytes"),
    _d("message.timestamp.after.max.ms", L, "3600000", H,
       "a CreateTime record further in the future than this is INVALID_TIMESTAMP", Range(0),
       "log.message.timestamp.after.max.ms"),
    _d("message.timestamp.before.max.ms", L, str(LONG_MAX), H,
       "a CreateTime record further in the past than this is INVALID_TIMESTAMP", Range(0),
       "log.message.timestamp.before.max.ms"),
    _d("message.timestamp.type", S, "CreateTime", H,
       "LogAppendTime: kop stamps batches with the time it appends them",
       OneOf(TIMESTAMP_TYPES), "log.message.timestamp.type"),
    _d("min.cleanable.dirty.ratio", D, "0.5", N, _COMPACTION, Range(0, 1),
       "log.cleaner.min.cleanable.ratio"),
    _d("min.compaction.lag.ms", L, "0", M, "on a compacted topic the Pulsar retention time "
       "is at least this, so nothing younger leaves the Kafka view (D10)", Range(0),
       "log.cleaner.min.compaction.lag.ms"),
    _d("min.insync.replicas", INT, "1", N,
       "validated; Pulsar's write quorum decides how many copies acknowledge a write",
       Range(1), "min.insync.replicas"),
    _d("preallocate", B, "false", N, _PULSAR_STORES, None, "log.preallocate"),
    _d("remote.log.copy.disable", B, "false", N, _TIERED),
    _d("remote.log.delete.on.disable", B, "false", N, _TIERED),
    _d("remote.storage.enable", B, "false", N,
       "true is refused, as by a Kafka broker without tiered storage (Pulsar offloads)"),
    _d("retention.bytes", L, "-1", M, "the Pulsar retention policy's size (per partition)",
       None, "log.retention.bytes"),
    _d("retention.ms", L, "604800000", M, "the Pulsar retention policy's time", Range(-1)),
    _d("segment.bytes", INT, "1073741824", N, _PULSAR_STORES, Range(1048576),
       "log.segment.bytes"),
    _d("segment.index.bytes", INT, "10485760", N, "kop keeps its own offset index", Range(4),
       "log.index.size.max.bytes"),
    _d("segment.jitter.ms", L, "0", N, _PULSAR_STORES, Range(0)),
    _d("segment.ms", L, "604800000", N, f"Pulsar rolls ledgers; {_PULSAR_STORES}", Range(1)),
    _d("unclean.leader.election.enable", B, "false", N, _ONE_BROKER, None,
       "unclean.leader.election.enable"),
)  # fmt: skip

TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in _DEFS}
# Listed twice by Kafka: the cluster-wide dynamic default (KIP-966) and the static one.
CLUSTER_WIDE = frozenset({"min.insync.replicas"})


def effect_table() -> str:
    """The markdown table docs/compatibility.md shows."""
    rows = ["| config | on kop | how |", "|---|---|---|"]
    rows += [f"| `{d.name}` | {d.effect.value} | {d.doc} |" for d in _DEFS]
    return "\n".join(rows)
