"""DescribeClientQuotas and AlterClientQuotas: what `kafka-configs --entity-type users
--entity-type clients` reads and writes (kop.quotas). Quotas name users and client
ids of every tenant, so both are broker-wide operations: superusers only, as Kafka
asks DESCRIBE_CONFIGS and ALTER_CONFIGS on the cluster."""

from __future__ import annotations

from collections.abc import Iterable

from kio.schema.alter_client_quotas.v1.request import AlterClientQuotasRequest
from kio.schema.alter_client_quotas.v1.request import EntityData as AlteredEntity
from kio.schema.alter_client_quotas.v1.response import AlterClientQuotasResponse
from kio.schema.alter_client_quotas.v1.response import EntityData as AlterEntityData
from kio.schema.alter_client_quotas.v1.response import EntryData as AlterEntryData
from kio.schema.describe_client_quotas.v1.request import DescribeClientQuotasRequest
from kio.schema.describe_client_quotas.v1.response import (
    DescribeClientQuotasResponse,
    EntityData,
    EntryData,
    ValueData,
)
from kio.static.primitive import f64

from kop.api.context import RequestContext, Services, error_of
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.quotas.book import Component, Op, QuotaBook
from kop.quotas.entities import KEYS, QuotaInvalid

MAX_FILTER = 8  # components in one DescribeClientQuotas filter (Kafka has two types)
MAX_ENTRIES = 1000  # entries in one AlterClientQuotas request
MAX_OPS = 16  # operations in one entry (Kafka has three keys a client may set)


async def describe(
    services: Services, ctx: RequestContext, request: DescribeClientQuotasRequest
) -> Now[DescribeClientQuotasResponse]:
    try:
        book = await _book(services, ctx)
        if len(request.components) > MAX_FILTER:
            raise QuotaInvalid(f"a filter has at most {MAX_FILTER} components")
        found = book.describe(
            (Component(c.entity_type, c.match_type, c.match) for c in request.components),
            request.strict,
        )
    except Exception as exc:
        code, message = _error(exc)
        return Now(
            DescribeClientQuotasResponse(
                throttle_time=NO_THROTTLE, error_code=code, error_message=message, entries=()
            )
        )
    entries = tuple(
        EntryData(
            entity=tuple(EntityData(entity_type=t, entity_name=n) for t, n in entity),
            values=tuple(ValueData(key=k, value=f64(values[k])) for k in KEYS if k in values),
        )
        for entity, values in found
    )
    return Now(
        DescribeClientQuotasResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            entries=entries,
        )
    )


async def alter(
    services: Services, ctx: RequestContext, request: AlterClientQuotasRequest
) -> Now[AlterClientQuotasResponse]:
    try:
        book = await _book(services, ctx)
        if len(request.entries) > MAX_ENTRIES:
            raise QuotaInvalid(f"a request alters at most {MAX_ENTRIES} entities")
    except Exception as exc:
        code, message = _error(exc)
        return Now(_altered(_answer(e.entity, code, message) for e in request.entries))
    out = []
    for entry in request.entries:
        try:
            if len(entry.ops) > MAX_OPS:
                raise QuotaInvalid(f"an entry has at most {MAX_OPS} operations")
            await book.alter(
                [(e.entity_type, e.entity_name) for e in entry.entity],
                [Op(o.key, float(o.value), o.remove) for o in entry.ops],
                request.validate_only,
            )
            out.append(_answer(entry.entity, ErrorCode.none, None))
        except Exception as exc:
            out.append(_answer(entry.entity, *_error(exc)))
    return Now(_altered(out))


ROUTES = (
    Route(
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        DescribeClientQuotasRequest,
        DescribeClientQuotasResponse,
        describe,
    ),
    Route(ApiKey.ALTER_CLIENT_QUOTAS, AlterClientQuotasRequest, AlterClientQuotasResponse, alter),
)


def _answer(
    entity: Iterable[AlteredEntity], code: ErrorCode, message: str | None
) -> AlterEntryData:
    """One entry's outcome, naming its entity as the request did."""
    return AlterEntryData(
        error_code=code,
        error_message=message,
        entity=tuple(
            AlterEntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entity
        ),
    )


def _altered(entries: Iterable[AlterEntryData]) -> AlterClientQuotasResponse:
    return AlterClientQuotasResponse(throttle_time=NO_THROTTLE, entries=tuple(entries))


async def _book(services: Services, ctx: RequestContext) -> QuotaBook:
    """The book as the store has it now, not as of the last refresh: `kafka-configs`
    describes before it deletes, at whichever instance it reaches, and an alteration
    builds on the entity's current values (a stale copy would be written over a newer
    one). One read of the namespace's properties per request; superusers only."""
    if not await ctx.access.cluster():
        raise KafkaError(ErrorCode.cluster_authorization_failed, "superusers only")
    await services.quotas.refresh()
    return services.quotas


def _error(exc: Exception) -> tuple[ErrorCode, str | None]:
    if isinstance(exc, QuotaInvalid):
        return ErrorCode.invalid_request, str(exc)
    return error_of(exc)
