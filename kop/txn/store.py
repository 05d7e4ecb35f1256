"""The transaction state topic: a compacted, partitioned Pulsar topic beside the
offsets topic, one record per change of a transactional id (`codec`), each
partition held by the instance that coordinates its transactional ids
(kop/systables/held_topic.py). A change is acknowledged only once persisted, which the
coordinator's rules wait for before they apply it (kop/txn/state.py)."""

from __future__ import annotations

from kop.storage.port import MessageLog
from kop.storage.types import OutgoingMessage
from kop.systables.barrier import HELD
from kop.systables.held_topic import HeldPartitions
from kop.txn.codec import MalformedRecord, decode, encode
from kop.txn.state import TxnMeta


def reserved(key: str) -> bool:
    """Whether a state key is the topic's own: a transactional id keyed so would have
    its state skipped at every load, as a new holder's barrier is."""
    return HELD.is_barrier(key)


class TxnStore:
    def __init__(
        self, storage: MessageLog, topic: str, partitions: int, *, write_timeout_s: float = 5.0
    ) -> None:
        self._held = HeldPartitions(
            storage, topic, partitions, malformed=MalformedRecord, write_timeout_s=write_timeout_s
        )

    @property
    def malformed(self) -> int:
        return self._held.malformed

    @property
    def partitions(self) -> int:
        return self._held.partitions

    def partition_for(self, txn_id: str) -> int:
        return self._held.partition_for(txn_id)

    def partition_topic(self, partition: int) -> str:
        """What its ownership is decided by: the state topic's Pulsar partition."""
        return self._held.partition_topic(partition)

    async def load(self, partition: int) -> dict[str, TxnMeta]:
        """Take the partition and read every transactional id's latest state."""
        metas: dict[str, TxnMeta] = {}

        def visit(key: str, payload: bytes | None) -> None:
            meta = decode(key, payload)
            if meta is None:
                metas.pop(key, None)
            else:
                metas[key] = meta

        await self._held.load(partition, visit)
        return metas

    def epoch(self, partition: int) -> int:
        """The coordinator epoch of a loaded partition (kop.systables.held_topic)."""
        return self._held.epoch(partition)

    async def write(self, meta: TxnMeta) -> None:
        key, payload = encode(meta)
        await self._held.write(key, [OutgoingMessage(payload, {}, key, None)])

    async def forget(self, txn_id: str) -> None:
        """A transactional id that expired: compaction drops it."""
        await self._held.write(txn_id, [OutgoingMessage(None, {}, txn_id, None)])

    async def release(self, partition: int) -> None:
        await self._held.release(partition)

    async def close(self) -> None:
        await self._held.close()
