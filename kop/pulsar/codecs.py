"""Kafka's codecs <-> Pulsar's batch compression (docs/decisions.md D11).

A `pulsar`-format entry holding records a Kafka producer compressed is stored
compressed in the Pulsar codec of the same algorithm, so Pulsar consumers read it
natively (their client decompresses) and kop serves it back in the producer's
Kafka codec. The map is one to one: gzip is stored as ZLIB (the same deflate
stream; only the framing differs, and kop re-frames when it serves), so a Pulsar
producer's ZLIB entry is served as gzip, its LZ4, ZSTD and SNAPPY as lz4, zstd and
snappy. The entry's metadata alone says the codec; no property is needed.
"""

from __future__ import annotations

from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

KAFKA_TO_PULSAR: dict[int, int] = {
    0: int(pb.NONE),
    1: int(pb.ZLIB),  # gzip
    2: int(pb.SNAPPY),
    3: int(pb.LZ4),
    4: int(pb.ZSTD),
}
PULSAR_TO_KAFKA: dict[int, int] = {p: k for k, p in KAFKA_TO_PULSAR.items()}


def pulsar_codec(kafka_codec: int) -> int:
    """Pulsar's CompressionType for a Kafka codec (ValueError for none of 0-4)."""
    try:
        return KAFKA_TO_PULSAR[kafka_codec]
    except KeyError:
        raise ValueError(f"no Kafka codec {kafka_codec}") from None


def kafka_codec(pulsar_codec: int) -> int:
    """The Kafka codec an entry stored in Pulsar's `pulsar_codec` is served in (0
    for NONE and for a codec kop does not know: its reader refused that entry)."""
    return PULSAR_TO_KAFKA.get(pulsar_codec, 0)
