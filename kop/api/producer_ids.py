"""InitProducerId for idempotent producers; a transactional one's goes to its
coordinator (kop.api.transactions)."""

from __future__ import annotations

from typing import Any

from kop.api import transactions
from kop.api.context import RequestContext, Response, Services
from kop.protocol.errors import ErrorCode, KafkaError


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
    # The id and epoch an idempotent producer names (KIP-360) are not looked at: Kafka
    # answers every idempotent InitProducerId with a new producer id at epoch 0. Before,
    # kop answered the named id at its epoch + 1 unchecked, so a client naming another
    # producer's id got an epoch that fenced it (issue 33).
    try:
        pid = services.producer_ids.next()
    except KafkaError as exc:  # the next block is on its way: the client retries
        return {"throttle_time": 0, "error_code": exc.code, "producer_id": -1,
                "producer_epoch": -1}  # fmt: skip
    return {"throttle_time": 0, "error_code": ErrorCode.none, "producer_id": pid,
            "producer_epoch": 0}  # fmt: skip
