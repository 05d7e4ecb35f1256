"""An asyncio client for Pulsar's binary protocol that moves whole entries.

kop stores pre-built entries (one MessageMetadata + payload each, possibly a batch in
Pulsar's batch layout) and reads them back the same way: one Python object per
entry, never per message, and no per-message Python work in between.

    client = WireClient("pulsar://localhost:6650")
    producer = await client.create_producer("persistent://public/default/t-partition-0")
    ledger, entry = await producer.send(metadata, payload)
    reader = await client.create_reader("persistent://public/default/t-partition-0", None)
    raw = await reader.read()

Its classes split the jobs as the Java client's do, one job a module:

- a connection (`ClientCnx`): `Connection` (what it owes its users: handshake,
  `PendingRequests`, `HandlerRegistry`, `KeepAlive`, `CommandDispatcher`) over
  `FrameStream` (the socket as frames, under the transport's flow control);
- a producer (`ProducerImpl`): `WireProducer` (the caller's face and handler),
  `SendPipeline` (stamp, chunk, frame, write), `SendQueue` (owed until receipts,
  resent after a reconnect), `ProducerLink` (created, lost, re-created), `access`
  (its access mode, topic epoch and name on the wire, and what a refusal means:
  `connectionOpened`'s part; `ProducerFencedException` is `ProducerFencedError`);
- a reader (`ConsumerImpl`): `WireReader` (the caller's face and handler, the
  permits it grants), `ReaderQueue` (what arrived, the permits' bookkeeping, chunks
  put together), `ReaderSubscription` (subscribed, lost, re-subscribed);
- what they share: `Session` (pool, lookups, timeouts), `retry`, `closing`.
"""

from kop.pulsar.wire.client import WireClient
from kop.pulsar.wire.errors import (
    ConnectionClosedError,
    CorruptEntryError,
    OperationTimeoutError,
    ProducerBusyError,
    ProducerFencedError,
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
    "ProducerBusyError",
    "ProducerFencedError",
    "ProtocolError",
    "PulsarWireError",
    "RawEntry",
    "WireClient",
    "WireProducer",
    "WireReader",
    "pb",
]
