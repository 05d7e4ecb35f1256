"""max_groups seen from the service: a refused new group is logged for the operator
(the client only learns COORDINATOR_NOT_AVAILABLE), once a minute at most."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kop.groups.coordinator import Limits
from kop.groups.offsets_store import OffsetsStore
from kop.groups.service import GroupService
from kop.groups.types import CommittedOffset, TopicPartition
from kop.protocol.errors import ErrorCode
from tests.sim.memory_log import MemoryLog

T = TopicPartition("t", 0)


async def test_a_refused_new_group_tells_the_operator_why(caplog: pytest.LogCaptureFixture) -> None:
    store = OffsetsStore(MemoryLog(), "persistent://public/__kop/consumer-offsets", 2)
    service = GroupService(store, Limits(max_groups=1))
    await service.start()
    try:
        while not service.loaded:
            await asyncio.sleep(0.001)
        offsets = {T: CommittedOffset(1)}
        assert await service.commit("first", -1, "", None, offsets) is ErrorCode.none
        with caplog.at_level(logging.WARNING, logger="kop.groups.service"):
            for group in ("second", "third"):
                code = await service.commit(group, -1, "", None, offsets)
                assert code is ErrorCode.coordinator_not_available
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "max_groups=1" in warnings[0] and "second" in warnings[0]
        assert await service.commit("first", -1, "", None, offsets) is ErrorCode.none
    finally:
        await service.close()
