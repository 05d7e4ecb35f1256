"""An idempotent InitProducerId gets a new producer id at epoch 0 whatever id and epoch
it names, as Kafka's coordinator answers it (issue 33, finding 7). Before, kop answered
the named id at epoch + 1 unchecked: a client naming another producer's id got an
epoch above that producer's, and writing with it fenced the producer in every
partition they shared."""

from __future__ import annotations

import datetime

from kio.schema.init_producer_id.v5.request import InitProducerIdRequest
from kio.static.primitive import i16, i32Timedelta, i64

from kop.api import producer_ids
from kop.api.context import RequestContext
from kop.protocol.errors import ErrorCode
from tests.unit.test_partition_limits import NS, _services

NO_TIMEOUT = i32Timedelta.parse(datetime.timedelta(milliseconds=-1))  # idempotent: none


async def test_a_named_producer_id_is_never_handed_back() -> None:
    services = await _services()
    ctx = RequestContext(NS, "test", 5)

    async def init(pid: int, epoch: int) -> tuple[int, int]:
        request = InitProducerIdRequest(
            transactional_id=None, transaction_timeout=NO_TIMEOUT,
            producer_id=i64(pid), producer_epoch=i16(epoch),
        )  # fmt: skip
        answer = (await producer_ids.handle(services, ctx, request)).answer
        assert answer.error_code is ErrorCode.none
        return answer.producer_id, answer.producer_epoch

    victim, epoch = await init(-1, -1)
    assert epoch == 0
    taken = {victim}
    for named in ((victim, 0), (victim, 7), (12345, 3)):  # KIP-360's bump, or anyone's id
        pid, epoch = await init(*named)
        assert epoch == 0 and pid not in taken
        taken.add(pid)
