"""An asyncio client for Pulsar's binary protocol that moves whole entries.

kop stores pre-built entries (one MessageMetadata + payload each, possibly a batch in
Pulsar's batch layout) and reads them back the same way: one Python object per
entry, never per message, and no per-message Python work in between.

    client = WireClient("pulsar://localhost:6650")
    producer = await client.create_producer("persistent://public/default/t-partition-0")
    ledger, entry = await producer.send(metadata, payload)
    reader = await client.create_reader("persistent://public/default/t-partition-0", None)
    raw = await reader.read()
"""

from kop.pulsar.wire.client import WireClient
from kop.pulsar.wire.errors import (
    ConnectionClosedError,
    CorruptEntryError,
    OperationTimeoutError,
    ProtocolError,
    PulsarWireError,
)
from kop.pulsar.wire.producer import WireProducer
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.reader import RawEntry, WireReader

__all__ = [
    "ConnectionClosedError",
    "CorruptEntryError",
    "OperationTimeoutError",
    "ProtocolError",
    "PulsarWireError",
    "RawEntry",
    "WireClient",
    "WireProducer",
    "WireReader",
    "pb",
]
