"""A producer's way from `send` to the wire (the send half of the Java client's
`ProducerImpl`).

Each entry is stamped with the producer's name, its own sequence id and the
publish time, checked against the broker's `maxMessageSize` (a single message too
big for one entry may go in chunks under its one sequence id, `chunking.py`),
framed once and queued in the `SendQueue` until its receipt. Frames are written at
the end of the loop iteration, with whatever else was sent meanwhile.
"""

from __future__ import annotations

import asyncio
import time

from kop.pulsar.wire import chunking
from kop.pulsar.wire.errors import PulsarWireError
from kop.pulsar.wire.frames import FRAME_PADDING, encode_payload_head
from kop.pulsar.wire.producer_link import ProducerLink
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.send_queue import Receipt, SendQueue

_SEND = pb.BaseCommand.Type.SEND  # looked up once: protobuf enum attribute access is slow


class SendPipeline:
    """`next_seq` is the sequence id the next entry gets; the producer decides
    whether it may send at all."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        link: ProducerLink,
        pending: SendQueue,
    ) -> None:
        self._loop = loop
        self._link = link
        self._pending = pending
        self.next_seq = 0
        self._flush_soon = False

    def send(
        self,
        metadata: pb.MessageMetadata,
        payload: bytes | memoryview,
        future: asyncio.Future[Receipt],
        chunks: bool,
    ) -> asyncio.Future[Receipt]:
        """Stamps, frames and queues one entry (`WireProducer.send` says what its
        future gives)."""
        link = self._link
        seq = self.next_seq
        metadata.producer_name = link.name
        metadata.sequence_id = seq
        metadata.publish_time = int(time.time() * 1000)
        meta = metadata.SerializeToString()
        limit = link.max_message_size
        too_big = len(payload) > limit or len(meta) + len(payload) > limit + FRAME_PADDING // 2
        if too_big and chunks and not metadata.HasField("num_messages_in_batch"):
            return self._send_chunks(metadata, payload, future)
        if too_big:
            future.set_exception(
                PulsarWireError(
                    f"entry of {len(payload)} bytes (+{len(meta)} of metadata) exceeds the "
                    f"broker's maxMessageSize {limit}",
                    retriable=False,
                )
            )
            return future
        self.next_seq = seq + 1
        num = metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 1
        self._push(seq, num, meta, payload, future)
        return future

    def _send_chunks(
        self,
        metadata: pb.MessageMetadata,
        payload: bytes | memoryview,
        future: asyncio.Future[Receipt],
    ) -> asyncio.Future[Receipt]:
        seq = self.next_seq
        size = chunking.chunk_size(metadata, self._link.max_message_size)
        pieces = chunking.cut(metadata, payload, size, f"{self._link.name}-{seq}")
        self.next_seq = seq + 1
        parts: list[asyncio.Future[Receipt]] = []
        for meta, part in pieces:
            parts.append(self._loop.create_future())
            self._push(seq, 1, meta.SerializeToString(), part, parts[-1], chunk=True)

        def settle(_: object) -> None:
            if future.done() or not all(p.done() for p in parts):
                return
            failed = next((p.exception() for p in parts if p.exception() is not None), None)
            if failed is not None:
                future.set_exception(failed)
            else:
                future.set_result(chunking.place([p.result() for p in parts]))

        for p in parts:
            p.add_done_callback(settle)
        return future

    def _push(
        self,
        seq: int,
        num: int,
        meta: bytes,
        payload: bytes | memoryview,
        future: asyncio.Future[Receipt],
        chunk: bool = False,
    ) -> None:
        producer_id = self._link.producer_id
        send = pb.CommandSend(
            producer_id=producer_id, sequence_id=seq, num_messages=num, highest_sequence_id=seq
        )
        if chunk:
            send.is_chunk = True
        command = pb.BaseCommand(type=_SEND, send=send)
        head = encode_payload_head(command, meta, payload)
        self._pending.push(seq, producer_id, head, payload, future)
        if not self._flush_soon and self._link.conn is not None:
            # Written at the end of this loop iteration: the entries sent meanwhile
            # go out together, in one system call when they are small.
            self._flush_soon = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Writes what is queued, as far as the connection takes it now."""
        self._flush_soon = False
        conn = self._link.conn
        if conn is not None:
            self._pending.write_to(conn)
