"""`share.auto.offset.reset=by_duration:<duration>` (Kafka 4.3's ShareGroupAutoOffsetReset
Strategy, kop/groups/share/reset.py and partitions.py): a share group's new subscription
on a partition starts at the first record written within the duration before now, at the
partition's end when none was, and a subscription that exists stays where it is. Over the
in-memory log and admin, on a simulated clock."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from kop.entries.formats import EntryFormat
from kop.groups.consumer.coordinator import ConsumerSettings
from kop.groups.group_configs import GroupSettings, broker_wide
from kop.groups.share.coordinator import ShareSettings
from kop.groups.share.partition import SharePartition
from kop.groups.share.partitions import SharePartitions
from kop.groups.share.reset import duration_ms, reset_value
from kop.log.partition_log import LogSettings, PartitionLog
from kop.protocol.records import Record, build_batch
from tests.sim.clock import SimLoop
from tests.sim.harness import TS, Node
from tests.sim.memory_admin import MemoryAdmin
from tests.sim.memory_log import MemoryLog

NOW = TS + 4_500  # records below are stamped TS+1000 .. TS+4000, one a second


class _World:
    def __init__(self, loop: SimLoop, reset: str) -> None:
        self.loop = loop
        self.log = MemoryLog()
        self.node = Node(loop, self.log, LogSettings())
        self.node.start()
        for i in range(4):
            self.produce(i, TS + 1_000 * (i + 1))
        self.plog: PartitionLog = self.node.partition()
        self.settings = dataclasses.replace(
            broker_wide(ConsumerSettings(), ShareSettings()), share_reset=reset
        )
        self.shares = SharePartitions(
            self.log, ShareSettings(), lambda: NOW, lambda _t: self.plog,
            settings_of=self._settings, starts=MemoryAdmin(self.log),
        )  # fmt: skip

    async def _settings(self, _key: str) -> GroupSettings:
        return self.settings

    def produce(self, i: int, ts: int) -> None:
        data = build_batch([Record(0, ts, None, f"r{i}".encode())])
        self.node.produce(data, EntryFormat.PULSAR)

    def share(self, group: str) -> SharePartition:
        return self.loop.run(self.shares.of(group, group, self.plog, ("t", 0)), within=10)

    def first_offsets(self, sp: SharePartition, want: int) -> list[int]:
        async def go() -> list[int]:
            held: list[int] = []
            for _ in range(300):
                got, _data = sp.acquire("m", 100, 1 << 20)
                held += [o for a in got for o in range(a.first, a.last + 1)]
                if len(held) >= want:
                    break
                await asyncio.sleep(0.01)
            return sorted(held)

        return self.loop.run(go(), within=30)


def test_a_new_subscription_starts_at_the_first_record_within_the_duration(
    loop: SimLoop,
) -> None:
    w = _World(loop, "by_duration:PT2S")  # from TS+2500: offsets 2 and 3
    assert w.first_offsets(w.share("g"), 2) == [2, 3]
    loop.run(w.shares.close(), within=10)


def test_nothing_written_within_the_duration_starts_at_the_end(loop: SimLoop) -> None:
    w = _World(loop, "by_duration:PT0.2S")
    sp = w.share("g")
    assert w.first_offsets(sp, 1) == []
    w.produce(4, NOW)
    assert w.first_offsets(sp, 1) == [4]
    loop.run(w.shares.close(), within=10)


def test_a_subscription_that_exists_stays_where_it_is(loop: SimLoop) -> None:
    w = _World(loop, "earliest")
    w.first_offsets(w.share("g"), 4)  # the group read from offset 0 ...
    loop.run(w.shares.close(), within=10)
    w.settings = dataclasses.replace(w.settings, share_reset="by_duration:PT1S")
    again = w.share("g")  # ... and a new reset setting does not move it
    assert w.first_offsets(again, 4) == [0, 1, 2, 3]
    loop.run(w.shares.close(), within=10)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("by_duration:PT1H", 3_600_000),
        ("by_duration:P1DT2H3M4.5S", 93_784_500),
        ("by_duration:pt30m", 1_800_000),
        ("by_duration:PT0S", 0),
        ("by_duration:-PT-1S", 1_000),
        ("by_duration:PT-1S", None),  # negative: refused, as Kafka refuses it
        ("by_duration:PT", None),
        ("by_duration:P1Y", None),  # years are ISO-8601 but not Java's Duration
        ("by_duration:", None),
        ("by_duration", None),
        ("by_duration:PT99999999999999999999S", None),
    ],
)
def test_durations_are_read_as_javas_duration_parse_reads_them(text: str, ms: int | None) -> None:
    assert duration_ms(text) == ms
    assert (reset_value(text) is not None) == (ms is not None)
