"""A group's configs through DescribeConfigs and IncrementalAlterConfigs (resource type
GROUP, `kafka-configs --entity-type groups`): the group is the client's tenant's (its
key, kop.groups.scope); describing needs what using the group needs, altering needs a
tenant admin (Kafka's ALTER_CONFIGS on the group). The overrides live in Pulsar
(kop.groups.group_config_book)."""

from __future__ import annotations

from collections.abc import Iterable

from kio.schema.describe_configs.v4.response import (
    DescribeConfigsResourceResult,
    DescribeConfigsSynonym,
)
from kio.static.primitive import i8

from kop.api.context import RequestContext, Services
from kop.api.groups import group_key
from kop.groups.group_configs import DEFS
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.naming import Namespace

GROUP = 32
SOURCE_DYNAMIC_GROUP = 8
SOURCE_DEFAULT = 5
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT = 1, 2, 3  # DescribeConfigs' config types
_TYPES = {"BOOLEAN": TYPE_BOOLEAN, "STRING": TYPE_STRING, "INT": TYPE_INT}


async def described(
    services: Services, ctx: RequestContext, group_id: str, synonyms: bool, docs: bool
) -> list[DescribeConfigsResourceResult]:
    ns, group = await _group(services, ctx, group_id)
    overrides = await services.groups.configs.overrides(ns, group)
    defaults = services.groups.configs.defaults.values()
    out = []
    for name, d in sorted(DEFS.items()):
        own = overrides.get(name)
        value = own if own is not None else defaults[name]
        source = SOURCE_DYNAMIC_GROUP if own is not None else SOURCE_DEFAULT
        chain: list[DescribeConfigsSynonym] = []
        if synonyms:
            if own is not None:
                chain.append(_synonym(name, own, SOURCE_DYNAMIC_GROUP))
            # the broker-wide setting, or (none: share.auto.offset.reset) the config's own
            # default under its own name, as Kafka lists them
            chain.append(_synonym(d.synonym or name, defaults[name], SOURCE_DEFAULT))
        out.append(DescribeConfigsResourceResult(
            name=name, value=value, read_only=False, config_source=i8(source),
            is_sensitive=False, synonyms=tuple(chain),
            config_type=i8(_TYPES[d.kind]),
            documentation=d.doc if docs else None,
        ))  # fmt: skip
    return out


async def altered(
    services: Services,
    ctx: RequestContext,
    group_id: str,
    ops: Iterable[tuple[str, int, str | None]],
    dry: bool,
) -> None:
    ns, group = await _group(services, ctx, group_id)
    if not await ctx.access.tenant_admin(ns):
        raise KafkaError(
            ErrorCode.group_authorization_failed,
            f"altering the configs of group {group_id} needs an admin of tenant {ns.tenant}",
        )
    await services.groups.configs.alter(ns, group, ops, dry)


async def _group(services: Services, ctx: RequestContext, group_id: str) -> tuple[Namespace, str]:
    if not group_id:
        raise KafkaError(ErrorCode.invalid_group_id, "the group id is empty")
    return services.groups.scope.split(await group_key(services, ctx, group_id))


def _synonym(name: str, value: str, source: int) -> DescribeConfigsSynonym:
    return DescribeConfigsSynonym(name=name, value=value, source=i8(source))
