"""InitProducerId for idempotent producers; a transactional one's goes to its
coordinator (kop.api.transactions)."""

from __future__ import annotations

from typing import Any

from kop.api import transactions
from kop.api.context import RequestContext, Response, Services
from kop.protocol.errors import ErrorCode

_MAX_EPOCH = 32766


async def handle(services: Services, ctx: RequestContext, request: Any) -> Response:
    if request.transactional_id is not None:
        return await transactions.init_producer_id(services, ctx, request)
    if not await ctx.access.idempotent_write(ctx.namespace):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.cluster_authorization_failed,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    pid = getattr(request, "producer_id", -1)
    epoch = getattr(request, "producer_epoch", -1)
    if pid >= 0 and 0 <= epoch < _MAX_EPOCH:
        # KIP-360: an idempotent producer bumps its epoch to reset its sequences.
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "producer_id": pid,
            "producer_epoch": epoch + 1,
        }
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "producer_id": services.producer_ids.next(),
        "producer_epoch": 0,
    }
