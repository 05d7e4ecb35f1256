"""Topic ids back to names, within the client's namespace only: another tenant's ids
are unknown to it (UNKNOWN_TOPIC_ID), as Metadata v12 answers them. KIP-932's APIs
name topics by id alone."""

from __future__ import annotations

import asyncio
import uuid

from kop.api.context import RequestContext, Services, topic_for
from kop.api.internal_topics import is_internal
from kop.protocol.errors import KafkaError
from kop.topics.catalog import TopicView


async def names_of(
    services: Services, ctx: RequestContext, ids: set[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """The names of those of `ids` that are topics of the client's namespace."""
    if not ids:
        return {}
    names = [n for n in await services.catalog.names(ctx.namespace) if not is_internal(n)]
    views = await asyncio.gather(*(_view(services, ctx, n) for n in names))
    found = zip(names, views, strict=True)
    return {v.topic_id: n for n, v in found if v is not None and v.topic_id in ids}


async def _view(services: Services, ctx: RequestContext, name: str) -> TopicView | None:
    try:
        return await services.catalog.describe(topic_for(ctx, name))
    except KafkaError:
        return None
