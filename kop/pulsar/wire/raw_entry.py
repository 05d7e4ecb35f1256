"""What a reader hands out, and where in a topic it is."""

from __future__ import annotations

from dataclasses import dataclass

from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

Position = tuple[int, int]  # (ledger, entry)
EARLIEST: Position = (-1, -1)


@dataclass(frozen=True, slots=True)
class RawEntry:
    """One Pulsar entry: its position, its metadata (a batch when
    `metadata.num_messages_in_batch` is set) and its payload, decompressed; or, when
    the payload does not decompress (`corrupt`), no payload."""

    ledger: int
    entry: int
    metadata: pb.MessageMetadata
    payload: bytes
    redelivery_count: int = 0
    broker_entry_metadata: pb.BrokerEntryMetadata | None = None
    corrupt: str | None = None  # why the payload could not be read (then it is b"")
