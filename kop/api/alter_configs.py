"""AlterConfigs and IncrementalAlterConfigs for topics: the configs kop honours
are stored as Pulsar topic properties and retention is applied as the Pulsar
retention policy (TopicCatalog.alter). IncrementalAlterConfigs also alters a group's
configs (kop/api/group_configs.py). kop's broker settings come from its
configuration file, so a BROKER resource is refused with a clear message."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from kio.schema.alter_configs.v2.request import AlterConfigsRequest, AlterConfigsResource
from kio.schema.alter_configs.v2.response import AlterConfigsResourceResponse, AlterConfigsResponse
from kio.schema.incremental_alter_configs.v1 import request as incremental_request
from kio.schema.incremental_alter_configs.v1 import response as incremental_response
from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest
from kio.schema.incremental_alter_configs.v1.response import IncrementalAlterConfigsResponse
from kio.static.primitive import i8

from kop.api import group_configs
from kop.api.configs import BROKER, TOPIC
from kop.api.context import (
    RequestContext,
    Services,
    error_of,
    existing_topic,
    permitted,
)
from kop.api.group_configs import GROUP
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.security.authorizer import TopicOp
from kop.topics.configs import incremental


async def alter_configs(
    services: Services, ctx: RequestContext, request: AlterConfigsRequest
) -> Now[AlterConfigsResponse]:
    """The whole set: what a resource does not name reverts to its default."""

    async def apply(res: AlterConfigsResource) -> None:
        _no_duplicates([c.name for c in res.configs])
        for c in res.configs:
            if c.value is None:
                raise KafkaError(
                    ErrorCode.invalid_request, f"Null value not supported for : {c.name}"
                )
        configs = {c.name: c.value for c in res.configs}
        topic = await permitted(ctx, res.resource_name, TopicOp.ALTER)
        await services.catalog.alter(topic, configs, request.validate_only)

    answers = await _each(ctx, request.resources, apply, (TOPIC,))
    responses = tuple(
        AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=kind, resource_name=name
        )
        for code, message, kind, name in answers
    )
    return Now(AlterConfigsResponse(throttle_time=NO_THROTTLE, responses=responses))


async def incremental_alter_configs(
    services: Services, ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> Now[IncrementalAlterConfigsResponse]:
    """SET, DELETE (back to the default), APPEND and SUBTRACT (list configs) (KIP-339)."""

    async def apply(res: incremental_request.AlterConfigsResource) -> None:
        _no_duplicates([c.name for c in res.configs])
        ops = [(c.name, int(c.config_operation), c.value) for c in res.configs]
        if res.resource_type == GROUP:
            await group_configs.altered(
                services, ctx, res.resource_name, ops, request.validate_only
            )
            return
        view = await existing_topic(services, ctx, res.resource_name, TopicOp.ALTER)
        after = incremental(view.explicit, view.configs, ops)
        await services.catalog.alter(view.topic, after, request.validate_only)

    answers = await _each(ctx, request.resources, apply, (TOPIC, GROUP))
    responses = tuple(
        incremental_response.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=kind, resource_name=name
        )
        for code, message, kind, name in answers
    )
    return Now(IncrementalAlterConfigsResponse(throttle_time=NO_THROTTLE, responses=responses))


ROUTES = (
    Route(ApiKey.ALTER_CONFIGS, AlterConfigsRequest, AlterConfigsResponse, alter_configs),
    Route(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
        incremental_alter_configs,
    ),
)


def _no_duplicates(names: list[str]) -> None:
    if len(set(names)) != len(names):
        raise KafkaError(ErrorCode.invalid_request, "Error due to duplicate config keys")


class _Resource(Protocol):
    """What the two APIs' resources share (each API has a class of its own)."""

    @property
    def resource_type(self) -> i8: ...

    @property
    def resource_name(self) -> str: ...


R = TypeVar("R", bound=_Resource)

BROKER_LOGGER = 8

# A resource's answer: its error code and message, its type and name.
Answer = tuple[ErrorCode, str | None, i8, str]


async def _each(
    ctx: RequestContext,
    resources: Sequence[R],
    apply: Callable[[R], Awaitable[None]],
    types: tuple[int, ...],
) -> list[Answer]:
    """Each resource of one of `types` applied alone, its error its own."""
    answers = []
    for res in resources:
        code, message = ErrorCode.none, None
        try:
            if res.resource_type == BROKER and not await ctx.access.cluster():
                raise KafkaError(ErrorCode.cluster_authorization_failed)
            if res.resource_type in (BROKER, BROKER_LOGGER):
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"resource type {res.resource_type}: kop's broker settings come from its "
                    "configuration file (kop.toml / KOP_* variables), not AlterConfigs",
                )
            if res.resource_type not in types:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"resource type {res.resource_type} cannot be altered with this API",
                )
            await apply(res)
        except Exception as exc:
            code, message = error_of(exc)
        answers.append((code, message, res.resource_type, res.resource_name))
    return answers
