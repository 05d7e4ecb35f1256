"""DescribeConfigs for topics (from Pulsar topic properties), groups
(kop/api/group_configs.py) and the broker."""

from __future__ import annotations

from kio.schema.describe_configs.v4.request import DescribeConfigsRequest
from kio.schema.describe_configs.v4.response import (
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from kio.static.primitive import i8

from kop.api import group_configs
from kop.api.context import RequestContext, Services, error_of, existing_topic
from kop.api.group_configs import GROUP
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.topics.config_defs import CLUSTER_WIDE, TOPIC_CONFIGS
from kop.topics.configs import (
    DLQ_ENABLE,
    ENTRY_FORMAT,
    PULSAR_BATCHING,
    SHARED_WRITES,
    SHOWN_WHEN_SET,
    config_type,
)

TOPIC = 2
BROKER = 4
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5

# The broker-wide settings kop reports on a BROKER resource, from topic defaults.
BROKER_SYNONYM = {
    "cleanup.policy": "log.cleanup.policy",
    "retention.bytes": "log.retention.bytes",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "compression.type": "compression.type",
    "min.insync.replicas": "min.insync.replicas",
}
TYPE_STRING = 2
TYPE_INT = 3
TYPE_LONG = 5
TYPE_LIST = 7


async def handle(
    services: Services, ctx: RequestContext, request: DescribeConfigsRequest
) -> Now[DescribeConfigsResponse]:
    results = []
    defaults = services.catalog.defaults.configs()
    synonyms, docs = request.include_synonyms, request.include_documentation
    for res in request.resources:
        code, message = ErrorCode.none, None
        chosen: tuple[DescribeConfigsResourceResult, ...] = ()
        try:
            keys = res.configuration_keys
            if res.resource_type == TOPIC:
                view = await existing_topic(services, ctx, res.resource_name)
                entries = topic_entries(view.configs, view.explicit, defaults, synonyms, docs)
            elif res.resource_type == GROUP:
                entries = await group_configs.described(
                    services, ctx, res.resource_name, synonyms, docs
                )
            elif res.resource_type == BROKER:
                if not await ctx.access.cluster():
                    raise KafkaError(ErrorCode.cluster_authorization_failed)
                values, sources = _broker(services, defaults)
                entries = [
                    _entry(k, v, sources[k], _suffix_type(k)) for k, v in sorted(values.items())
                ]
            else:
                raise KafkaError(
                    ErrorCode.invalid_request, f"resource type {res.resource_type} is not supported"
                )
            chosen = tuple(e for e in entries if keys is None or e.name in keys)
        except Exception as exc:
            code, message = error_of(exc)
        results.append(
            DescribeConfigsResult(
                error_code=code,
                error_message=message,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
                configs=chosen,
            )
        )
    return Now(DescribeConfigsResponse(throttle_time=NO_THROTTLE, results=tuple(results)))


ROUTES = (Route(ApiKey.DESCRIBE_CONFIGS, DescribeConfigsRequest, DescribeConfigsResponse, handle),)


def _broker(
    services: Services, defaults: dict[str, str]
) -> tuple[dict[str, str | None], dict[str, int]]:
    """The broker-wide settings, under Kafka's broker names, from kop's configuration."""
    node = str(services.broker.node_id)
    retention_ms = int(defaults["retention.ms"])
    hours, rest = divmod(retention_ms, 3_600_000)
    values: dict[str, str | None] = {
        "broker.id": node,
        "node.id": node,
        "auto.create.topics.enable": str(services.auto_create_topics).lower(),
        "num.partitions": str(services.catalog.defaults.partitions),
        "default.replication.factor": "1",
        # Kafka keeps log.retention.ms unset and derives it from the hours.
        "log.retention.ms": None if rest == 0 and retention_ms > 0 else str(retention_ms),
        "log.retention.hours": str(hours if rest == 0 and retention_ms > 0 else 168),
        **{
            broker: defaults[topic] for topic, broker in BROKER_SYNONYM.items() if topic in defaults
        },
    }
    values["offsets.retention.minutes"] = str(services.groups.offsets.retention_ms // 60_000)
    limits = services.groups.coordinator.limits
    values["group.initial.rebalance.delay.ms"] = str(limits.initial_rebalance_delay_ms)
    sources = dict.fromkeys(values, SOURCE_DEFAULT)
    sources.update({"broker.id": SOURCE_STATIC_BROKER, "node.id": SOURCE_STATIC_BROKER})
    sources.update(dict.fromkeys(CLUSTER_WIDE, SOURCE_DYNAMIC_DEFAULT_BROKER))
    return values, sources


def topic_entries(
    configs: dict[str, str],
    explicit: dict[str, str],
    defaults: dict[str, str],
    synonyms: bool = False,
    docs: bool = False,
) -> list[DescribeConfigsResourceResult]:
    """A topic's configs as DescribeConfigs (and CreateTopics v5+) report them: the
    ones a client set are DYNAMIC_TOPIC_CONFIG, also when equal to the default."""
    out = []
    for name, value in sorted(configs.items()):
        if name in SHOWN_WHEN_SET and name not in explicit:
            continue
        if name in explicit:
            source = SOURCE_DYNAMIC_TOPIC
        elif name in CLUSTER_WIDE:
            source = SOURCE_DYNAMIC_DEFAULT_BROKER
        else:
            source = SOURCE_DEFAULT
        definition = TOPIC_CONFIGS.get(name)
        out.append(
            _entry(
                name,
                value,
                source,
                int(config_type(name)),
                _synonyms(name, value, source, defaults) if synonyms else (),
                (definition.doc if definition else _KOP_DOCS.get(name)) if docs else None,
            )
        )
    return out


_KOP_DOCS = {
    ENTRY_FORMAT: "kop: how records are stored in Pulsar (pulsar: one message per record; "
    "kafka: the batch verbatim)",
    PULSAR_BATCHING: "kop: false writes one Pulsar entry per record",
    SHARED_WRITES: "kop: true lets Pulsar producers write the topic beside kop (kop fences "
    "when it takes a partition, then shares); kop's pulsar_shared_writes is the default",
    DLQ_ENABLE: "true lets share groups write their dead-letter records here (KIP-1191, "
    "after Kafka 4.3)",
}


def _synonyms(
    name: str, value: str | None, source: int, defaults: dict[str, str]
) -> tuple[DescribeConfigsSynonym, ...]:
    """The topic's own setting first (if any), then its broker-wide defaults, as Kafka
    lists them (none for configs whose broker setting has several units)."""
    out = []
    if source == SOURCE_DYNAMIC_TOPIC:
        out.append(_synonym(name, value, SOURCE_DYNAMIC_TOPIC))
    default = defaults.get(name, value)
    if name in CLUSTER_WIDE:
        out.append(_synonym(name, default, SOURCE_DYNAMIC_DEFAULT_BROKER))
    definition = TOPIC_CONFIGS.get(name)
    for broker in definition.synonyms if definition else ():
        out.append(_synonym(broker, default, SOURCE_DEFAULT))
    return tuple(out)


def _synonym(name: str, value: str | None, source: int) -> DescribeConfigsSynonym:
    return DescribeConfigsSynonym(name=name, value=value, source=i8(source))


def _suffix_type(name: str) -> int:
    """A broker setting's config_type, told by its name."""
    return TYPE_LONG if name.endswith((".ms", ".bytes")) else TYPE_STRING


def _entry(
    name: str,
    value: str | None,
    source: int,
    kind: int,
    synonyms: tuple[DescribeConfigsSynonym, ...] = (),
    documentation: str | None = None,
) -> DescribeConfigsResourceResult:
    return DescribeConfigsResourceResult(
        name=name,
        value=value,
        read_only=source
        not in (SOURCE_DYNAMIC_TOPIC, SOURCE_DEFAULT, SOURCE_DYNAMIC_DEFAULT_BROKER),
        config_source=i8(source),
        is_sensitive=False,
        synonyms=synonyms,
        config_type=i8(kind),
        documentation=documentation,
    )
