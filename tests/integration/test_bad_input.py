"""Malformed frames, unknown versions, oversized and corrupt batches get Kafka's
answer or a closed connection — never a crash, and other clients never notice."""

from __future__ import annotations

import struct

import pytest
from kio.schema.errors import ErrorCode

from conformance.clients.raw import RawClient
from kop.protocol.records import Record, build_batch
from tests.integration.clients import PRODUCERS, Rec, kp_consume
from tests.integration.conftest import KopProcess


def _still_serving(kop: KopProcess, topic: str) -> None:
    recs = [Rec(b"k", b"alive", (), 1_700_000_000_000)]
    offsets = PRODUCERS["kafka-python"](kop.bootstrap, topic, recs, None)
    assert [r.value for r in kp_consume(kop.bootstrap, topic, 1, start=offsets[0])] == [b"alive"]


def _produce(client: RawClient, topic: str, records: bytes) -> ErrorCode:
    return client.produce(topic, records, acks=1)[0]


def test_too_new_api_versions_gets_unsupported_version_and_its_own_range(kop: KopProcess) -> None:
    client = RawClient(kop.port)
    client.send_frame(struct.pack(">hhih", 18, 99, 42, -1) + b"\x00")
    frame = client.recv_frame()
    # Kafka answers with a v0 ApiVersions body: correlation id, error code, and the
    # range of ApiVersions alone (KIP-511; kop listed every API until conformance/
    # compared it with Kafka 4.3).
    correlation, error, count = struct.unpack_from(">ihi", frame, 0)
    assert correlation == 42 and error == ErrorCode.unsupported_version
    ranges = [struct.unpack_from(">hhh", frame, 10 + 6 * i) for i in range(count)]
    assert ranges == [(18, 0, 4)]
    client.close()


@pytest.mark.parametrize(
    "frame",
    [
        struct.pack(">hhih", 0, 1, 1, -1),  # Produce v1: below what kop supports
        struct.pack(">hhih", 1234, 0, 1, -1),  # no such API
        b"\x00\x03",  # shorter than a header
        struct.pack(">hhih", 3, 12, 1, -1) + b"\xff" * 7,  # Metadata with a garbage body
    ],
    ids=["old-version", "unknown-api", "short", "garbage-body"],
)
def test_undecodable_requests_close_only_that_connection(
    kop: KopProcess, topic: str, frame: bytes
) -> None:
    client = RawClient(kop.port, timeout=10)
    client.send_frame(frame)
    assert client.is_closed_by_peer()
    client.close()
    _still_serving(kop, topic)


def test_oversized_frame_closes_the_connection(kop: KopProcess, topic: str) -> None:
    client = RawClient(kop.port, timeout=10)
    client.sock.sendall(struct.pack(">i", 2**31 - 1) + b"\x00" * 16)
    assert client.is_closed_by_peer()
    _still_serving(kop, topic)


def test_corrupt_batch_gets_corrupt_message_and_writes_nothing(kop: KopProcess, topic: str) -> None:
    _still_serving(kop, topic)
    client = RawClient(kop.port)
    batch = bytearray(build_batch([Record(0, 1, b"k", b"v" * 50)]))
    batch[-3] ^= 0x55
    assert _produce(client, topic, bytes(batch)) == ErrorCode.corrupt_message
    assert _produce(client, topic, b"\x00" * 70) == ErrorCode.invalid_record  # magic 0
    assert _produce(client, topic, b"\x01\x02") == ErrorCode.corrupt_message
    client.close()
    recs = [Rec(b"k", b"next", (), 1_700_000_000_000)]
    assert PRODUCERS["kafka-python"](kop.bootstrap, topic, recs, None) == [1]


def test_oversized_batch_gets_message_too_large(kop: KopProcess, topic: str) -> None:
    _still_serving(kop, topic)
    client = RawClient(kop.port)
    big = build_batch([Record(0, 1, None, b"x" * (2 * 1024 * 1024))])
    assert _produce(client, topic, big) == ErrorCode.message_too_large
    client.close()


def test_unknown_topic_and_partition_are_reported(kop: KopProcess, topic: str) -> None:
    client = RawClient(kop.port)
    batch = build_batch([Record(0, 1, None, b"v")])
    assert _produce(client, f"{topic}-never-created", batch) == ErrorCode.unknown_topic_or_partition
    assert _produce(client, "bad/name", batch) == ErrorCode.invalid_topic_exception
    client.close()


def test_pipelined_requests_are_answered_in_order(kop: KopProcess, topic: str) -> None:
    _still_serving(kop, topic)
    client = RawClient(kop.port)
    sent = []
    for i in range(20):
        batch = build_batch([Record(0, 1, None, f"p{i}".encode())])
        correlation, payload = client.encode(0, 9, **client.produce_fields(topic, batch))
        client.send_frame(payload)
        sent.append(correlation)
    offsets = []
    for correlation in sent:
        resp = client.decode(0, 9, correlation, client.recv_frame())
        offsets.append(resp.responses[0].partition_responses[0].base_offset)
    assert offsets == list(range(1, 21))
    client.close()
