"""The one transactional id kop keeps for itself. The transaction state topic keys each
id's state by the id (default namespace) and a new holder of a state partition writes
a barrier record under the key `barrier|`, which loads skip: a transactional id of
that name would have its state skipped at every load (its producer fenced or its
transaction forgotten at the next takeover). It is refused, as ids starting with `//`
are, with INVALID_REQUEST and a message naming it; any other id is served."""

from __future__ import annotations

import asyncio
import datetime

from conformance.clients.raw import RawClient
from kop.protocol.errors import ErrorCode
from tests.gateway.memory_gateway import gateway_with_hot_topic
from tests.gateway.test_zombie_txn_offsets import _init

INIT_PRODUCER_ID, FIND_COORDINATOR = 22, 10


async def test_the_state_topics_barrier_key_is_no_transactional_id() -> None:
    async with gateway_with_hot_topic(1) as (gateway, _backend):
        client = RawClient(gateway.kafka_port)
        try:
            r = await asyncio.to_thread(
                client.request, INIT_PRODUCER_ID, 4, transactional_id="barrier|",
                transaction_timeout=datetime.timedelta(seconds=60),
                producer_id=-1, producer_epoch=-1,
            )  # fmt: skip
            assert r.error_code == ErrorCode.invalid_request
            found = await asyncio.to_thread(
                client.request, FIND_COORDINATOR, 4, key_type=1,
                coordinator_keys=("barrier|",),
            )  # fmt: skip
            assert found.coordinators[0].error_code == ErrorCode.invalid_request
            assert "reserved" in (found.coordinators[0].error_message or "")
            pid, epoch = await asyncio.to_thread(_init, client, "barrier")
            assert pid >= 0 and epoch == 0
        finally:
            client.close()
