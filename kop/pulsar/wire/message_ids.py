"""Pulsar's message ids as kop uses them: signed (ledger, entry) pairs."""

from __future__ import annotations

from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

_U64 = 1 << 64


def signed64(value: int) -> int:
    """Pulsar's ids are uint64 on the wire; -1 (no such entry) comes as 2**64 - 1."""
    return value - _U64 if value >= 1 << 63 else value


def message_id(mid: pb.MessageIdData) -> tuple[int, int]:
    return signed64(mid.ledgerId), signed64(mid.entryId)
