"""Reading a system table up to one's own barrier: the one way kop knows it has read
everything that was in a table when it started reading.

A table's end cannot be found by position: compaction removes tombstones and
superseded records, so a reader waiting for the last message id it was told of may
wait forever. Instead the reader writes a barrier, a message of a key no record ever
has, holding a nonce of its own, and reads until it reads that barrier back: Pulsar
stores in order, so everything stored before the barrier (an earlier holder's last
writes in flight included) has been read by then. Other readers' barriers are skipped.

Each table keeps the barrier format it has always written, since kop instances of
another version read the same tables: the held partitions of the offsets, transaction
and producer id topics write `barrier|` with the bare nonce; the leader epoch table
writes `sync|<node id>` with `{"sync": nonce}`. Membership needs no barrier of its
own: an instance's first heartbeat is one (kop.cluster.beats).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kop.storage import batch_layout
from kop.storage.port import TopicReader
from kop.storage.types import Idle, OutgoingMessage, StoredMessage


@dataclass(frozen=True, slots=True)
class BarrierFormat:
    """How one table's barriers look."""

    prefix: str  # every barrier's key starts with it; no record's key does
    owner_in_key: bool  # `<prefix><owner>` (else the prefix alone)
    json_payload: bool  # `{"sync": nonce}` (else the nonce's bytes)

    def is_barrier(self, key: str) -> bool:
        return key.startswith(self.prefix) if self.owner_in_key else key == self.prefix

    def message(self, nonce: str, owner: str = "") -> OutgoingMessage:
        key = f"{self.prefix}{owner}" if self.owner_in_key else self.prefix
        body = json.dumps({"sync": nonce}).encode() if self.json_payload else nonce.encode()
        return OutgoingMessage(body, {}, key, None)

    def nonce_of(self, payload: bytes) -> str | None:
        """The nonce a barrier holds (None: not one this format reads)."""
        if not self.json_payload:
            return payload.decode(errors="replace")
        try:
            nonce = json.loads(payload).get("sync")
        except (ValueError, TypeError, AttributeError):
            return None
        return nonce if isinstance(nonce, str) else None


HELD = BarrierFormat("barrier|", owner_in_key=False, json_payload=False)
EPOCHS = BarrierFormat("sync|", owner_in_key=True, json_payload=True)


def new_nonce() -> str:
    return uuid.uuid4().hex


async def read_to_barrier(
    reader: TopicReader, fmt: BarrierFormat, nonce: str | None,
    visit: Callable[[StoredMessage], None],
) -> None:  # fmt: skip
    """Every record up to the barrier holding `nonce`, barriers skipped (None: up to the
    end the reader reports as idle, for a reader that does not take the table)."""
    while True:
        stored = await reader.read()
        if isinstance(stored, Idle):
            if nonce is None:
                return
            continue  # the barrier is still on its way
        for msg in batch_layout.messages(stored):
            if fmt.is_barrier(msg.partition_key):
                if nonce is not None and fmt.nonce_of(msg.payload) == nonce:
                    return
                continue
            visit(msg)


class Barriers:
    """Barriers written to a table that a tail follows, waiting to be read back."""

    def __init__(self, fmt: BarrierFormat) -> None:
        self.format = fmt
        self._waiting: dict[str, asyncio.Future[None]] = {}

    def written(self, owner: str) -> tuple[OutgoingMessage, asyncio.Future[None]]:
        """A new barrier to write, and what resolves when the tail reads it back (the
        caller removes it with `forget` however the wait ends)."""
        nonce = new_nonce()
        read_back = asyncio.get_running_loop().create_future()
        self._waiting[nonce] = read_back
        return self.format.message(nonce, owner), read_back

    def forget(self, read_back: asyncio.Future[None]) -> None:
        for nonce, waiting in list(self._waiting.items()):
            if waiting is read_back:
                del self._waiting[nonce]

    def read(self, msg: StoredMessage) -> bool:
        """Whether the tail's message is a barrier (to skip); resolves this one's."""
        if not self.format.is_barrier(msg.partition_key):
            return False
        waiting = self._waiting.get(self.format.nonce_of(msg.payload) or "")
        if waiting is not None and not waiting.done():
            waiting.set_result(None)
        return True
