"""Producer ids handed out in blocks claimed through Pulsar, never from a clock
(issue 33, finding 7; Kafka's ProducerIdManager, KIP-730).

Before, a producer id was the wall clock's milliseconds with the node id and a
counter: the same node restarted with its clock stepped back handed out ids again,
and a new producer's first batch was answered as a duplicate of an old one, or
refused as out of order. Now every instance claims blocks of `block_size` ids in one
system topic partition: it takes the partition with a fencing writer, reads it up to
a barrier of its own (so it has seen every earlier claim, an in-flight one of a
fenced claimer included), and writes its claim past the highest end seen. Claims
are totally ordered by the log, and a claimer fenced before its claim is stored
fails and claims again, so no id is handed out twice whatever the clocks say.

A block is claimed before the current one runs out (at 10% left); if it runs out
anyway, InitProducerId is answered COORDINATOR_LOAD_IN_PROGRESS and the client
retries, as Kafka answers while its next block is on its way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random

from kop.aio.futures import cancel_and_wait
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.port import MessageLog
from kop.storage.types import OutgoingMessage
from kop.systables.held_topic import HeldPartitions

log = logging.getLogger(__name__)

BLOCK_SIZE = 1000  # Kafka's producer id block
CLAIM_KEY = "block"
TOPIC = "kop-producer-ids"  # in the system namespace, partitioned with one partition


class MalformedClaim(Exception):
    """A record of the producer id topic that is not a claim of this format."""


def encode_claim(first: int, size: int, node_id: int) -> bytes:
    return json.dumps({"v": 1, "first": first, "size": size, "node": node_id}).encode()


def claim_end(payload: bytes | None) -> int:
    """Where a claim's block ends (exclusive)."""
    try:
        value = json.loads(payload or b"")
        first, size = value["first"], value["size"]
    except (ValueError, KeyError, TypeError) as exc:
        raise MalformedClaim(f"not a producer id claim: {exc}") from None
    if type(first) is not int or type(size) is not int or first < 0 or size < 1:
        raise MalformedClaim("a producer id claim needs non-negative integers")
    return first + size


class ProducerIdBlocks:
    """`next()` for InitProducerId: the next id of this instance's current block."""

    def __init__(
        self, storage: MessageLog, topic: str, node_id: int, block_size: int = BLOCK_SIZE
    ) -> None:
        self._claims = HeldPartitions(storage, topic, 1, malformed=MalformedClaim)
        self._node = node_id
        self._size = block_size
        self._next = self._end = 0  # the current block: [next, end)
        self._spare: tuple[int, int] | None = None  # the block after it, once claimed
        self._claiming: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """The first block, claimed before kop serves anyone (instances starting
        together fence each other's claims: each tries again, a few times)."""
        self._next, self._end = await self._claim_again(attempts=8)

    def next(self) -> int:
        if self._next >= self._end and self._spare is not None:
            (self._next, self._end), self._spare = self._spare, None
        if self._next >= self._end:
            self._refill()
            raise KafkaError(
                ErrorCode.coordinator_load_in_progress, "the next producer id block is on its way"
            )
        pid = self._next
        self._next += 1
        if self._end - self._next <= self._size // 10:
            self._refill()
        return pid

    def _refill(self) -> None:
        if self._spare is None and (self._claiming is None or self._claiming.done()):
            self._claiming = asyncio.create_task(self._claim_spare(), name="producer-id-block")

    async def _claim_spare(self) -> None:
        self._spare = await self._claim_again(attempts=None)

    async def _claim_again(self, attempts: int | None) -> tuple[int, int]:
        """`_claim`, tried again after a failure (Pulsar away, or fenced by another
        claimer), backing off; the last failure raises after `attempts` (None: never)."""
        delay, tried = 0.05, 0
        while True:
            tried += 1
            try:
                return await self._claim()
            except Exception as exc:
                if attempts is not None and tried >= attempts:
                    raise
                log.warning("claiming a producer id block: %s; again in %.2fs", exc, delay)
            await asyncio.sleep(delay * (1 + random.random()))  # claimers apart
            delay = min(delay * 2, 5.0)

    async def _claim(self) -> tuple[int, int]:
        """Take the topic, read every claim up to this claim's barrier, claim the
        block past the highest end, and let the topic go."""
        ends = [0]

        def visit(key: str, payload: bytes | None) -> None:
            if key == CLAIM_KEY:
                ends.append(claim_end(payload))

        try:
            await self._claims.load(0, visit)
            first = max(ends)
            claim = encode_claim(first, self._size, self._node)
            await self._claims.write(CLAIM_KEY, [OutgoingMessage(claim, {}, CLAIM_KEY, None)])
        finally:
            await self._claims.release(0)
        log.info("producer ids %d..%d claimed", first, first + self._size - 1)
        return first, first + self._size

    async def close(self) -> None:
        if self._claiming is not None:
            await cancel_and_wait(self._claiming)
        await self._claims.close()
