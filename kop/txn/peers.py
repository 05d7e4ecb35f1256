"""Requests between kop instances for transactions, as Kafka's brokers make them:
markers for partitions another instance serves (WriteTxnMarkers, as a coordinator
sends markers to partition leaders), and the verification of a transactional write
at the instance coordinating its transactional id (AddPartitionsToTxn v4 verify-only,
as a partition leader asks the coordinator under KIP-890), or its implicit add there
(not verify-only: transaction version 2).

A request goes to the other instance's PLAINTEXT listener (kop's inter-instance
listener, as Kafka's inter.broker.listener) over kept connections (a few idle ones
per instance; one found closed is replaced once). Each connection first proves it
is a kop instance of this cluster by the `KOP-PEER` SASL exchange over the cluster
secret (kop.sasl.peers); an instance takes these requests only from a
connection so proven (`is_peer`), or from a superuser, never by a client id.
Partitions are named as the coordinator records them, (partition topic, Kafka
index), a marker's topic by the Kafka name any instance resolves (`kafka_name`).
"""

from __future__ import annotations

import asyncio
import io
import re
import struct
from collections.abc import Iterable
from typing import Any

from kio.index import load_response_schema
from kio.schema.add_partitions_to_txn.v4.request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.schema.write_txn_markers.v1.request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from kop.cluster.member import Member
from kop.cluster.ownership import Ownership
from kop.protocol.control import Marker
from kop.protocol.errors import ErrorCode
from kop.sasl.peers import PEER_MECHANISM, ClusterSecret, final_message, first_message
from kop.sasl.peers import is_instance as is_peer
from kop.storage.types import StorageError
from kop.txn.state import Partition

PEER_PREFIX = "kop-peer-"  # the client id of kop's requests (for logs, never trusted)
# Requests are kio entities of one version each (WriteTxnMarkers v1, AddPartitionsToTxn
# v4, the SASL pair): the version a request is sent at is its class's.
PeerRequest = (
    WriteTxnMarkersRequest | AddPartitionsToTxnRequest | SaslHandshakeRequest
    | SaslAuthenticateRequest
)  # fmt: skip
_SIZE = struct.Struct(">i")


def kafka_name(partition_topic: str) -> str:
    """The Kafka name any instance resolves to the partition's topic: its full Pulsar
    name (a non-partitioned topic's partition is the topic itself)."""
    return re.sub(r"-partition-\d+$", "", partition_topic)


__all__ = ["CoordinatorFenced", "PeerUnreachable", "Peers", "is_peer", "kafka_name"]


class CoordinatorFenced(StorageError):
    """A partition has taken a marker from a later coordinator of this transaction's
    state partition: this one is stale and must stop (Kafka's
    TRANSACTION_COORDINATOR_FENCED)."""


class PeerUnreachable(Exception):
    """The other instance could not be asked (down, not listening, a bad answer)."""


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]
KEPT_IDLE = 4  # connections kept open per instance between requests


class Peers:
    def __init__(
        self, ownership: Ownership, secret: ClusterSecret | None = None, timeout_s: float = 10.0
    ) -> None:
        self._ownership = ownership
        self._secret = secret  # None: no proof to give (the others refuse these requests)
        self._timeout_s = timeout_s
        self._idle: dict[tuple[str, int], list[Connection]] = {}
        self._correlation = 0

    async def close(self) -> None:
        for kept in self._idle.values():
            for _reader, writer in kept:
                writer.close()
        self._idle.clear()

    async def write(self, owner: Member, partitions: Iterable[Partition], marker: Marker) -> None:
        """Every one of `partitions` (all `owner`'s) holds the marker when this returns;
        StorageError otherwise (the coordinator retries)."""
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(partitions):
            topics.setdefault(kafka_name(topic), []).append(index)
        body = WriteTxnMarkersRequest(markers=(WritableTxnMarker(
            producer_id=ProducerId(marker.producer_id), producer_epoch=i16(marker.producer_epoch),
            transaction_result=marker.commit, coordinator_epoch=i32(marker.coordinator_epoch),
            topics=tuple(
                WritableTxnMarkerTopic(name=TopicName(t), partition_indexes=tuple(map(i32, ps)))
                for t, ps in topics.items()
            ),
        ),))  # fmt: skip
        try:
            answer = await self._ask(owner, body)
        except PeerUnreachable as exc:
            raise StorageError(f"markers to instance {owner.node_id}: {exc}") from exc
        # A partition that refuses the marker's epoch as stale has seen a later one:
        # nothing is left to end there (Kafka's coordinator drops such a marker too).
        codes = [p.error_code for m in answer.markers for t in m.topics for p in t.partitions]
        if ErrorCode.transaction_coordinator_fenced in codes:
            raise CoordinatorFenced(f"instance {owner.node_id}: a later coordinator wrote there")
        done = (ErrorCode.none, ErrorCode.invalid_producer_epoch)
        failed = [f"{t.name}-{p.partition_index}: {p.error_code.name}"
                  for m in answer.markers for t in m.topics for p in t.partitions
                  if p.error_code not in done]  # fmt: skip
        if failed:
            raise StorageError(f"instance {owner.node_id} did not write markers: {failed}")

    async def add_partition(
        self, coordinator: Member, txn_key: str, producer_id: int, epoch: int, part: Partition,
        *, verify_only: bool,
    ) -> ErrorCode:  # fmt: skip
        """The coordinator's verdict on a write into `part` by the producer's ongoing
        transaction (verify-only), or on adding `part` to it (the transactional id as
        kop keys it, tenant included): NONE, or the error the write gets
        (COORDINATOR_NOT_AVAILABLE when it cannot be asked)."""
        body = AddPartitionsToTxnRequest(transactions=(AddPartitionsToTxnTransaction(
            transactional_id=TransactionalId(txn_key), producer_id=ProducerId(producer_id),
            producer_epoch=i16(epoch), verify_only=verify_only,
            topics=(AddPartitionsToTxnTopic(name=TopicName(part[0]), partitions=(i32(part[1]),)),),
        ),))  # fmt: skip
        try:
            answer = await self._ask(coordinator, body)
        except PeerUnreachable:
            return ErrorCode.coordinator_not_available
        if answer.error_code != 0:
            return ErrorCode(answer.error_code)
        codes = [p.partition_error_code for t in answer.results_by_transaction
                 for r in t.topic_results for p in r.results_by_partition]  # fmt: skip
        return ErrorCode(codes[0]) if codes else ErrorCode.unknown_server_error

    async def _ask(self, to: Member, body: PeerRequest) -> Any:
        address = dict(((n, (h, p)) for n, h, p in to.listeners))
        if "PLAINTEXT" not in address and to.listeners:
            raise PeerUnreachable(f"instance {to.node_id} has no PLAINTEXT listener")
        host, port = address.get("PLAINTEXT", (to.host, to.port))
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._request(host, port, body)
        except (OSError, EOFError, TimeoutError, ValueError) as exc:
            raise PeerUnreachable(f"{host}:{port}: {exc!r}") from exc

    async def _request(self, host: str, port: int, body: PeerRequest) -> Any:
        """Over an idle kept connection, or a new one. One that the other instance
        closed meanwhile (a restart, an idle timeout) fails as it is used: the
        request is sent once more over a new one (each of these requests may be
        repeated: a marker written twice or a partition added twice changes nothing
        the second time). A connection whose request failed, or was cancelled, is
        closed, since its stream may be out of step."""
        address = (host, port)
        idle = self._idle.setdefault(address, [])
        while True:
            kept = idle.pop() if idle else None
            connection = kept or await asyncio.open_connection(host, port)
            try:
                if kept is None:
                    await self._prove(connection)
                answer = await self._exchange(connection, body)
            except BaseException as exc:
                connection[1].close()
                if kept is None or not isinstance(exc, (OSError, EOFError)):
                    raise
                continue
            if len(idle) < KEPT_IDLE:
                idle.append(connection)
            else:
                connection[1].close()
            return answer

    async def _prove(self, connection: Connection) -> None:
        """A new connection proves it is an instance of this cluster (KOP-PEER)."""
        if self._secret is None:
            return
        instance = self._ownership.me.instance
        shake = await self._exchange(connection, SaslHandshakeRequest(mechanism=PEER_MECHANISM))
        if shake.error_code != 0:
            raise ValueError(f"KOP-PEER refused: {ErrorCode(shake.error_code).name}")
        first, nonce = first_message(instance)
        challenge = await self._sasl_step(connection, first)
        await self._sasl_step(connection, final_message(self._secret, instance, nonce, challenge))

    async def _sasl_step(self, connection: Connection, message: bytes) -> bytes:
        answer = await self._exchange(connection, SaslAuthenticateRequest(auth_bytes=message))
        if answer.error_code != 0:
            raise ValueError(f"KOP-PEER failed: {answer.error_message}")
        return bytes(answer.auth_bytes)

    async def _exchange(self, connection: Connection, body: PeerRequest) -> Any:
        reader, writer = connection
        self._correlation = correlation = (self._correlation + 1) % 2**31
        schema = type(body)
        api, version = int(schema.__api_key__), int(schema.__version__)
        out = io.BytesIO()
        header = schema.__header_schema__(
            request_api_key=i16(api), request_api_version=i16(version),
            correlation_id=i32(correlation), client_id=PEER_PREFIX + self._ownership.me.instance,
        )  # fmt: skip
        entity_writer(schema.__header_schema__)(out, header)
        entity_writer(schema)(out, body)
        frame = out.getvalue()
        writer.write(_SIZE.pack(len(frame)) + frame)
        await writer.drain()
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        data = await reader.readexactly(size)
        response = load_response_schema(api, version)
        head, used = entity_reader(response.__header_schema__)(data, 0)
        if head.correlation_id != correlation:
            raise ValueError(f"answer to request {head.correlation_id}, not {correlation}")
        answer, _ = entity_reader(response)(data, used)
        return answer
