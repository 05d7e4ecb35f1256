"""Requests between kop instances (kop.txn.peers) keep their connections: under
transaction version 2 every transaction asks the coordinating instance once per
partition, and a TCP connection opened for each request (as before) cost a connect,
a new connection at the other end and a socket in TIME_WAIT every time. A kept
connection the other instance closed meanwhile (a restart, an idle timeout) is
replaced without the request failing."""

from __future__ import annotations

import asyncio
import io
import struct

from kio.index import load_request_schema, load_response_schema
from kio.schema.add_partitions_to_txn.v4.response import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
)
from kio.schema.types import TopicName, TransactionalId
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from kop.cluster.member import Member
from kop.protocol.errors import ErrorCode
from kop.protocol.values import NO_THROTTLE
from kop.sasl.peer_client import PeerClient
from kop.txn.peers import Peers

ADD_PARTITIONS_TO_TXN, VERIFY_VERSION = 24, 4  # what kop.txn.peers sends a coordinator

SIZE = struct.Struct(">i")
PART = ("persistent://public/default/hot-partition-0", 0)


class Coordinator:
    """Another instance as the asking one sees it: answers every verification NONE;
    counts its connections; with `close_after_answer`, closes each once answered."""

    def __init__(self, close_after_answer: bool = False) -> None:
        self.connections = 0
        self.close_after_answer = close_after_answer
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Member:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return Member(1, "127.0.0.1", port, "other", listeners=(("PLAINTEXT", "127.0.0.1", port),))

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                (size,) = SIZE.unpack(await reader.readexactly(4))
                frame = await reader.readexactly(size)
                writer.write(self._answer(frame))
                await writer.drain()
                if self.close_after_answer:
                    break
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()

    @staticmethod
    def _answer(frame: bytes) -> bytes:
        schema = load_request_schema(ADD_PARTITIONS_TO_TXN, VERIFY_VERSION)
        head, _ = entity_reader(schema.__header_schema__)(frame, 0)
        response = load_response_schema(ADD_PARTITIONS_TO_TXN, VERIFY_VERSION)
        out = io.BytesIO()
        entity_writer(response.__header_schema__)(
            out, response.__header_schema__(correlation_id=head.correlation_id)
        )
        part = AddPartitionsToTxnPartitionResult(
            partition_index=i32(0), partition_error_code=ErrorCode.none
        )
        topic = AddPartitionsToTxnTopicResult(name=TopicName(PART[0]), results_by_partition=(part,))
        body = AddPartitionsToTxnResponse(
            throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
            results_by_transaction=(AddPartitionsToTxnResult(
                transactional_id=TransactionalId("t"), topic_results=(topic,)
            ),),
        )  # fmt: skip
        entity_writer(response)(out, body)
        data = out.getvalue()
        return SIZE.pack(len(data)) + data


def _peers() -> Peers:
    me = Member(0, "127.0.0.1", 1, "me")
    return Peers(PeerClient(me.instance))


async def _verify(peers: Peers, to: Member) -> ErrorCode:
    return await peers.add_partition(to, "t", 7, 0, PART, verify_only=True)


async def test_requests_to_an_instance_share_a_kept_connection() -> None:
    coordinator = Coordinator()
    peers = _peers()
    async with coordinator as other:
        answers = [await _verify(peers, other) for _ in range(5)]
        together = await asyncio.gather(*[_verify(peers, other) for _ in range(3)])
        await peers.close()
    assert answers == [ErrorCode.none] * 5 and list(together) == [ErrorCode.none] * 3
    assert coordinator.connections == 3  # one for the five in turn, three at once


async def test_a_kept_connection_the_other_instance_closed_is_replaced() -> None:
    coordinator = Coordinator(close_after_answer=True)
    peers = _peers()
    async with coordinator as other:
        answers = [await _verify(peers, other) for _ in range(3)]
        await peers.close()
    assert answers == [ErrorCode.none] * 3
    assert coordinator.connections == 3
