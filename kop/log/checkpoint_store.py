"""Offset-index checkpoints persisted in a compacted Pulsar topic.

One message per checkpoint, keyed `partition|offset`, so compaction keeps
every checkpoint once and a tombstone removes one. A restarted or new owner
loads them and resumes counting from the last one instead of rescanning.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict

from kop.log.offset_index import Checkpoint
from kop.storage.port import MessageLog
from kop.storage.types import Idle, OutgoingMessage, Position

log = logging.getLogger(__name__)


class CheckpointStore:
    def __init__(self, session: MessageLog, topic: str) -> None:
        self._session = session
        self.topic = topic
        self._loaded: dict[str, list[Checkpoint]] = {}

    async def load(self) -> None:
        found: dict[str, dict[int, Checkpoint]] = defaultdict(dict)
        reader = await self._session.reader(self.topic, None, compacted=True)
        reader.report_idle()
        count = 0
        try:
            while not isinstance(msg := await reader.read(), Idle):
                partition, _, offset_text = msg.partition_key.rpartition("|")
                offset = int(offset_text)
                count += 1
                if msg.null_value or not msg.payload:
                    found[partition].pop(offset, None)
                    continue
                v = json.loads(msg.payload)
                found[partition][offset] = Checkpoint(
                    offset, Position(v["l"], v["e"], v["b"]), v["t"]
                )
        finally:
            await reader.close()
        self._loaded = {p: sorted(cps.values()) for p, cps in found.items() if cps}
        log.info("loaded %d offset-index messages for %d partitions", count, len(self._loaded))

    def checkpoints(self, partition: str) -> list[Checkpoint]:
        return list(self._loaded.get(partition, []))

    async def save(self, partition: str, checkpoints: list[Checkpoint]) -> None:
        producer = await self._session.writer(self.topic)
        messages = []
        for c in checkpoints:
            body = {
                "l": c.position[0],
                "e": c.position[1],
                "b": c.position[2],
                "t": c.max_ts_before,
            }
            messages.append(
                OutgoingMessage(json.dumps(body).encode(), {}, _key(partition, c.offset), None)
            )
        await producer.send_all(messages)[1]
        self._loaded.setdefault(partition, []).extend(checkpoints)

    async def forget(self, partition: str) -> None:
        """Tombstone every checkpoint of a deleted partition."""
        stale = self._loaded.pop(partition, [])
        if not stale:
            return
        producer = await self._session.writer(self.topic)
        tombstones = [OutgoingMessage(None, {}, _key(partition, c.offset), None) for c in stale]
        await producer.send_all(tombstones)[1]


def _key(partition: str, offset: int) -> str:
    return f"{partition}|{offset:020d}"
