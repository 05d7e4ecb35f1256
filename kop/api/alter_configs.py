"""AlterConfigs and IncrementalAlterConfigs for topics: the configs kop honours
are stored as Pulsar topic properties and retention is applied as the Pulsar
retention policy (TopicCatalog.alter). kop's broker settings come from its
configuration file, so a BROKER resource is refused with a clear message."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kop.api.configs import BROKER, TOPIC
from kop.api.context import (
    RequestContext,
    Response,
    Services,
    error_of,
    existing_topic,
    permitted,
)
from kop.protocol.errors import ErrorCode, KafkaError
from kop.security.authorizer import TopicOp
from kop.topics.configs import incremental


async def alter_configs(services: Services, ctx: RequestContext, request: Any) -> Response:
    """The whole set: what a resource does not name reverts to its default."""

    async def apply(res: Any) -> None:
        _no_duplicates([c.name for c in res.configs])
        for c in res.configs:
            if c.value is None:
                raise KafkaError(
                    ErrorCode.invalid_request, f"Null value not supported for : {c.name}"
                )
        configs = {c.name: c.value for c in res.configs}
        topic = await permitted(ctx, res.resource_name, TopicOp.ALTER)
        await services.catalog.alter(topic, configs, request.validate_only)

    return await _each(ctx, request, apply)


async def incremental_alter_configs(
    services: Services, ctx: RequestContext, request: Any
) -> Response:
    """SET, DELETE (back to the default), APPEND and SUBTRACT (list configs) (KIP-339)."""

    async def apply(res: Any) -> None:
        _no_duplicates([c.name for c in res.configs])
        view = await existing_topic(services, ctx, res.resource_name, TopicOp.ALTER)
        ops = [(c.name, c.config_operation, c.value) for c in res.configs]
        after = incremental(view.explicit, view.configs, ops)
        await services.catalog.alter(view.topic, after, request.validate_only)

    return await _each(ctx, request, apply)


def _no_duplicates(names: list[str]) -> None:
    if len(set(names)) != len(names):
        raise KafkaError(ErrorCode.invalid_request, "Error due to duplicate config keys")


async def _each(
    ctx: RequestContext, request: Any, apply: Callable[[Any], Awaitable[None]]
) -> Response:
    responses = []
    for res in request.resources:
        code, message = ErrorCode.none, None
        try:
            if res.resource_type == BROKER and not await ctx.access.cluster():
                raise KafkaError(ErrorCode.cluster_authorization_failed)
            if res.resource_type != TOPIC:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"resource type {res.resource_type}: kop's broker settings come from its "
                    "configuration file (kop.toml / KOP_* variables), not AlterConfigs",
                )
            await apply(res)
        except Exception as exc:
            code, message = error_of(exc)
        responses.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": res.resource_type,
                "resource_name": res.resource_name,
            }
        )
    return {"throttle_time": 0, "responses": responses}
