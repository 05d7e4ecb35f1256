"""Markers for partitions another kop instance serves: sent to it as a WriteTxnMarkers
request, as Kafka's transaction coordinator sends markers to partition leaders.

The request goes to the owner's PLAINTEXT listener (kop's inter-instance listener,
as Kafka's inter.broker.listener), named `kop-peer-<instance>` after the sender's
instance id, which only kop's membership topic holds: the owner takes markers from
a live instance so named (or from a superuser, as `kafka-transactions abort`).
Every failure is a StorageError, so the coordinator retries.
"""

from __future__ import annotations

import asyncio
import io
import re
import struct
from collections.abc import Iterable
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from kop.cluster.member import Member
from kop.cluster.ownership import Ownership
from kop.protocol.control import Marker
from kop.protocol.messages import build
from kop.storage.types import StorageError
from kop.txn.state import Partition

PEER_PREFIX = "kop-peer-"
WRITE_TXN_MARKERS, VERSION = 27, 1
_SIZE = struct.Struct(">i")


def kafka_name(partition_topic: str) -> str:
    """The Kafka name any instance resolves to the partition's topic: its full Pulsar
    name (a non-partitioned topic's partition is the topic itself)."""
    return re.sub(r"-partition-\d+$", "", partition_topic)


class PeerMarkers:
    def __init__(self, ownership: Ownership, timeout_s: float = 10.0) -> None:
        self._ownership = ownership
        self._timeout_s = timeout_s

    async def write(self, owner: Member, partitions: Iterable[Partition], marker: Marker) -> None:
        """Every one of `partitions` (all `owner`'s) holds the marker when this returns."""
        address = dict(((n, (h, p)) for n, h, p in owner.listeners))
        if "PLAINTEXT" not in address and owner.listeners:
            raise StorageError(f"instance {owner.node_id} has no PLAINTEXT listener for markers")
        host, port = address.get("PLAINTEXT", (owner.host, owner.port))
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(partitions):
            topics.setdefault(kafka_name(topic), []).append(index)
        body = {"markers": ({
            "producer_id": marker.producer_id, "producer_epoch": marker.producer_epoch,
            "transaction_result": marker.commit, "coordinator_epoch": marker.coordinator_epoch,
            "topics": tuple({"name": t, "partition_indexes": tuple(ps)}
                            for t, ps in topics.items()),
        },)}  # fmt: skip
        try:
            async with asyncio.timeout(self._timeout_s):
                answer = await self._request(host, port, body)
        except (OSError, EOFError, TimeoutError, ValueError) as exc:
            raise StorageError(
                f"markers to instance {owner.node_id} at {host}:{port}: {exc!r}"
            ) from exc
        failed = [f"{t.name}-{p.partition_index}: {p.error_code.name}"
                  for m in answer.markers for t in m.topics for p in t.partitions
                  if p.error_code != 0]  # fmt: skip
        if failed:
            raise StorageError(f"instance {owner.node_id} did not write markers: {failed}")

    async def _request(self, host: str, port: int, body: dict[str, Any]) -> Any:
        schema = load_request_schema(WRITE_TXN_MARKERS, VERSION)
        out = io.BytesIO()
        header = schema.__header_schema__(
            request_api_key=i16(WRITE_TXN_MARKERS), request_api_version=i16(VERSION),
            correlation_id=i32(1),
            client_id=PEER_PREFIX + self._ownership.me.instance,
        )  # fmt: skip
        entity_writer(schema.__header_schema__)(out, header)
        entity_writer(schema)(out, build(schema, body))
        reader, writer = await asyncio.open_connection(host, port)
        try:
            frame = out.getvalue()
            writer.write(_SIZE.pack(len(frame)) + frame)
            await writer.drain()
            (size,) = _SIZE.unpack(await reader.readexactly(4))
            data = await reader.readexactly(size)
        finally:
            writer.close()
        response = load_response_schema(WRITE_TXN_MARKERS, VERSION)
        _head, used = entity_reader(response.__header_schema__)(data, 0)
        answer, _ = entity_reader(response)(data, used)
        return answer
