"""Pulsar may re-deliver messages after a reconnect; neither the tail reader nor a
history read may count one twice (offsets would shift and wrong data be served).
A scripted reader stands in for Pulsar's here, to put duplicates where we want."""

from __future__ import annotations

import asyncio
from typing import Any

from kop.log.checkpoint_store import CheckpointStore
from kop.log.partition_log import LogSettings, PartitionLog
from kop.protocol.records import iter_records
from kop.storage.types import IDLE
from kop.storage.types import StoredMessage as PulsarMessage


def _msg(entry: int, value: bytes) -> PulsarMessage:
    return PulsarMessage((7, entry, -1), value, False, {}, "", 1000 + entry, 1000 + entry)


SCRIPT = [
    _msg(0, b"a"),
    _msg(0, b"a"),
    _msg(1, b"b"),
    _msg(1, b"b"),
    _msg(0, b"a"),
    _msg(2, b"c"),
    _msg(3, b"d"),
]


class _ScriptedReader:
    def __init__(self) -> None:
        self._items: list[Any] = [*SCRIPT]
        self._idle = False

    def report_idle(self) -> None:
        self._idle = True

    async def read(self) -> Any:
        if self._items:
            return self._items.pop(0)
        if self._idle:
            self._idle = False
            return IDLE
        await asyncio.Event().wait()  # a caught-up reader waits for new messages
        raise AssertionError("unreachable")

    async def close(self) -> None:
        return None


class _Session:
    async def reader(self, topic: str, start: object, **_: Any) -> _ScriptedReader:
        return _ScriptedReader()


async def test_redelivered_messages_are_counted_once() -> None:
    store = CheckpointStore(_Session(), "persistent://t/n/index")  # type: ignore[arg-type]
    settings = LogSettings(tail_buffer_bytes=0)  # force reads of old offsets through Pulsar
    plog = PartitionLog(_Session(), store, "persistent://t/n/x-partition-0", settings)  # type: ignore[arg-type]
    await asyncio.wait_for(plog.open(), 5)
    try:
        assert plog.high_watermark == 4
        values = [r.value for r in iter_records(await plog.read(0, 1 << 20))]
        assert values == [b"a", b"b", b"c", b"d"]
        later = [(r.offset, r.value) for r in iter_records(await plog.read(1, 1 << 20))]
        assert later == [(1, b"b"), (2, b"c"), (3, b"d")]
    finally:
        await plog.close()
