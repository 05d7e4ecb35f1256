"""API key -> handler, and turning a handler's answer into the versioned response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kop.api import (
    api_versions,
    configs,
    fetch,
    list_offsets,
    metadata,
    produce,
    producer_ids,
    topics_admin,
)
from kop.api.context import HandlerResult, RequestContext, Services
from kop.protocol.messages import ApiKey

Handler = Callable[[Services, RequestContext, Any], Awaitable[HandlerResult]]

HANDLERS: dict[ApiKey, Handler] = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.CREATE_TOPICS: topics_admin.create_topics,
    ApiKey.DELETE_TOPICS: topics_admin.delete_topics,
    ApiKey.INIT_PRODUCER_ID: producer_ids.handle,
    ApiKey.DESCRIBE_CONFIGS: configs.handle,
    ApiKey.CREATE_PARTITIONS: topics_admin.create_partitions,
}
