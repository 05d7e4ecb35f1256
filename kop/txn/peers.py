"""Requests between kop instances for transactions, as Kafka's brokers make them:
markers for partitions another instance serves (WriteTxnMarkers, as a coordinator
sends markers to partition leaders), and the verification of a transactional write
at the instance coordinating its transactional id (AddPartitionsToTxn v4 verify-only,
as a partition leader asks the coordinator under KIP-890), or its implicit add there
(not verify-only: transaction version 2).

The requests travel over kop.sasl.peer_client (kept connections proven by
`KOP-PEER`); an instance takes them only from a connection so proven (`is_peer`), or
from a superuser, never by a client id.
Partitions are named as the coordinator records them, (partition topic, Kafka
index), a marker's topic by the Kafka name any instance resolves (`kafka_name`).
"""

from __future__ import annotations

from collections.abc import Iterable

from kio.schema.add_partitions_to_txn.v4.request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.schema.write_txn_markers.v1.request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from kio.static.primitive import i16, i32

from kop.cluster.member import Member
from kop.protocol.control import Marker
from kop.protocol.errors import ErrorCode
from kop.sasl.peer_client import PeerClient, PeerUnreachable, kafka_name
from kop.sasl.peers import is_instance as is_peer
from kop.storage.types import StorageError
from kop.txn.state import Partition

__all__ = ["CoordinatorFenced", "Peers", "is_peer", "kafka_name"]


class CoordinatorFenced(StorageError):
    """A partition has taken a marker from a later coordinator of this transaction's
    state partition: this one is stale and must stop (Kafka's
    TRANSACTION_COORDINATOR_FENCED)."""


class Peers:
    """The transaction coordinator's requests to other instances."""

    def __init__(self, client: PeerClient) -> None:
        self._client = client

    async def close(self) -> None:
        await self._client.close()

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
            answer = await self._client.ask(owner, body)
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
            answer = await self._client.ask(coordinator, body)
        except PeerUnreachable:
            return ErrorCode.coordinator_not_available
        if answer.error_code != 0:
            return ErrorCode(answer.error_code)
        codes = [p.partition_error_code for t in answer.results_by_transaction
                 for r in t.topic_results for p in r.results_by_partition]  # fmt: skip
        return ErrorCode(codes[0]) if codes else ErrorCode.unknown_server_error
