"""Producer ids come in blocks claimed through the storage, never from a clock (issue
33, finding 7; Kafka's KIP-730). Before, an id was the wall clock's milliseconds with
the node id: the same node restarted with its clock stepped back handed the same ids
out again (a new producer's batch answered as a duplicate of an old one's)."""

from __future__ import annotations

import asyncio

from kop.protocol.errors import ErrorCode, KafkaError
from kop.txn.producer_ids import ProducerIdBlocks
from tests.sim.memory_log import MemoryLog

TOPIC = "persistent://public/__kop/kop-producer-ids"


async def _started(log: MemoryLog, node: int, size: int = 10) -> ProducerIdBlocks:
    blocks = ProducerIdBlocks(log.instance(), TOPIC, node, block_size=size)
    await blocks.start()
    return blocks


async def _take(blocks: ProducerIdBlocks, n: int) -> list[int]:
    """`n` ids, waiting (with a deadline) where the next block is still on its way."""
    out: list[int] = []
    async with asyncio.timeout(10):
        while len(out) < n:
            try:
                out.append(blocks.next())
            except KafkaError as exc:
                assert exc.code is ErrorCode.coordinator_load_in_progress
                await asyncio.sleep(0.001)
    return out


async def test_a_restarted_node_never_hands_out_an_id_again() -> None:
    log = MemoryLog()
    first = await _started(log, node=0)
    before = await _take(first, 25)
    await first.close()  # the process ends; its clock may be anywhere now
    again = await _started(log, node=0)
    after = await _take(again, 25)
    assert len(set(before)) == 25 and not set(before) & set(after)
    await again.close()


async def test_instances_claiming_at_once_get_disjoint_blocks() -> None:
    """Claims fence each other (each takes the topic with a fencing writer); a fenced
    claim is made again, so every id is handed out once across the instances."""
    log = MemoryLog()
    instances = await asyncio.gather(*(_started(log, node) for node in range(4)))
    taken = await asyncio.gather(*(_take(b, 35) for b in instances))
    every = [pid for ids in taken for pid in ids]
    assert len(every) == len(set(every)) == 140
    for b in instances:
        await b.close()


async def test_an_exhausted_block_is_answered_retriable_until_the_next_one_is_there() -> None:
    log = MemoryLog()
    blocks = await _started(log, node=0, size=10)
    ids = [blocks.next() for _ in range(10)]  # the spare's claim started at 90%
    assert ids == list(range(10))
    ids += await _take(blocks, 5)
    assert len(set(ids)) == 15
    await blocks.close()
