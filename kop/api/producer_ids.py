"""InitProducerId for idempotent producers; a transactional one's goes to its
coordinator (kop.api.transactions)."""

from __future__ import annotations

from kio.schema.init_producer_id.v5.request import InitProducerIdRequest
from kio.schema.init_producer_id.v5.response import InitProducerIdResponse

from kop.api import transactions
from kop.api.context import RequestContext, Services
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey


async def handle(
    services: Services, ctx: RequestContext, request: InitProducerIdRequest
) -> Now[InitProducerIdResponse]:
    if request.transactional_id is not None:
        return Now(
            await transactions.init_producer_id(services, ctx, request.transactional_id, request)
        )
    if not await ctx.access.idempotent_write(ctx.namespace):
        return Now(transactions.init_answer(ErrorCode.cluster_authorization_failed, -1, -1))
    # The id and epoch an idempotent producer names (KIP-360) are not looked at: Kafka
    # answers every idempotent InitProducerId with a new producer id at epoch 0. Before,
    # kop answered the named id at its epoch + 1 unchecked, so a client naming another
    # producer's id got an epoch that fenced it (issue 33).
    try:
        pid = services.producer_ids.next()
    except KafkaError as exc:  # the next block is on its way: the client retries
        return Now(transactions.init_answer(exc.code, -1, -1))
    return Now(transactions.init_answer(ErrorCode.none, pid, 0))


ROUTES = (Route(ApiKey.INIT_PRODUCER_ID, InitProducerIdRequest, InitProducerIdResponse, handle),)
