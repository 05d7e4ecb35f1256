"""`compact,delete`: what compaction kept expires after retention.ms as well, oldest
first (Kafka deletes old segments whatever they hold); plain `compact` never expires."""

from __future__ import annotations

from typing import Any, cast

from kop.log.checkpoint_store import Persisted
from kop.log.compacted.part import CompactedPart
from kop.log.compacted.survivors import Horizon, Survivor
from kop.log.offset_index import Checkpoint, Mark, OffsetIndex
from kop.log.settings import LogSettings
from kop.log.stats import LogStats
from kop.storage.types import Position

LIVE = 100  # where the live ledgers begin


def _part(now: list[int]) -> CompactedPart:
    index = OffsetIndex(
        checkpoints=[Checkpoint(LIVE, Position(9, 0))], mark=Mark(Position(9, 5), 120)
    )
    unused = cast(Any, None)  # storage, Pulsar and the store are not met here
    part = CompactedPart(
        unused, unused, unused, "t", index, LogStats(), LogSettings(), now_ms=lambda: now[0]
    )
    survivors = {
        0: Survivor(0, 1, 0, publish_time=1_000),
        10: Survivor(10, 1, 4, publish_time=2_000),
        50: Survivor(50, 2, 7, publish_time=3_000),
    }
    part.restore(Persisted(survivors=survivors, horizon=Horizon(Position(9, 5), 120, 0)))
    return part


def test_compact_alone_keeps_every_survivor() -> None:
    part = _part([10**9])
    assert part.log_start == 0


def test_compact_delete_expires_survivors_older_than_retention() -> None:
    now = [3_000]
    part = _part(now)
    part.expire_ms = 1_500  # survivors written before 1,500 are gone
    assert part.log_start == 10
    now[0] = 4_000  # before 2,500
    assert part.log_start == 50
    now[0] = 10_000  # all of them: the log starts where the live ledgers do
    assert part.log_start == LIVE
