"""Bad input, sent as exact frames (the "raw" client): what comes back, or whether
the broker closes the connection. Kafka's answer is the specification. A request
about a partition goes to its leader, as a client sends it (conformance/clients/raw.py)."""

from __future__ import annotations

import datetime
import struct
import time
from typing import Any

from aiokafka.record.default_records import DefaultRecordBatchBuilder
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.types import TopicName

from conformance.clients.raw import RawClient, to_leader
from conformance.model import Ctx, Observation, scenario
from conformance.setup import create_topic

RAW = ("raw",)
T0 = 1_700_000_000_000


def raw_client(ctx: Ctx, topic: str | None = None, partition: int = 0) -> RawClient:
    """A connection to the bootstrap, or to the leader of a topic's partition."""
    if topic is None:
        return RawClient.at(ctx.bootstrap, timeout=15)
    return to_leader(ctx.bootstrap, topic, partition)


def batch(
    values: list[bytes], magic: int = 2, producer: tuple[int, int, int] = (-1, -1, -1)
) -> bytes:
    """A record batch; `producer` is (id, epoch, base sequence) for an idempotent one."""
    pid, epoch, sequence = producer
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=0, producer_id=pid,
        producer_epoch=epoch, base_sequence=sequence, batch_size=1 << 24,
    )  # fmt: skip
    for i, v in enumerate(values):
        builder.append(i, timestamp=T0 + i, key=None, value=v, headers=[])
    data = bytearray(builder.build())
    data[16] = magic  # the magic byte sits after base offset, length and epoch
    return bytes(data)


def _frame_answer(client: RawClient, payload: bytes) -> bytes | None:
    """The response frame, or None when the broker closed the connection."""
    client.send_frame(payload)
    try:
        return client.recv_frame()
    except (ConnectionError, OSError):
        return None


def _produce_code(ctx: Ctx, topic: str, records: bytes) -> Any:
    client = raw_client(ctx, topic)
    try:
        code, _ = client.produce(topic, records)
        return code.name
    except (ConnectionError, OSError):
        return "connection closed"
    finally:
        client.close()


@scenario("bad-input/unsupported-version", RAW, quick=True)
def unsupported_version(ctx: Ctx, _client: object) -> Observation:
    """ApiVersions v127 gets UNSUPPORTED_VERSION in a v0 body that lists ApiVersions
    alone (KIP-511), so the client retries with a version both know; a Metadata
    version beyond the advertised range is refused."""
    client = raw_client(ctx)
    head = struct.pack(">hhih", 18, 127, 42, 3) + b"raw" + b"\x00"
    answer = _frame_answer(client, head + b"\x00\x00\x00")
    client.close()
    out: dict[str, Any] = {}
    if answer is None:
        out["api-versions v127"] = "connection closed"
    else:
        correlation, code, count = struct.unpack_from(">ihi", answer, 0)
        keys = {struct.unpack_from(">h", answer, 10 + 6 * i)[0] for i in range(max(count, 0))}
        out["api-versions v127"] = {"correlation": correlation, "error": code, "keys": sorted(keys)}
    client = raw_client(ctx)
    head = struct.pack(">hhih", 3, 99, 43, 3) + b"raw"
    answer = _frame_answer(client, head + b"\x00\x00\x00\x00\x01\x00\x00")
    out["metadata v99"] = "connection closed" if answer is None else "answered"
    client.close()
    return out


@scenario("bad-input/trailing-bytes", RAW, quick=True)
def trailing_bytes(ctx: Ctx, _client: object) -> Observation:
    """Bytes after the fields a request version defines (librdkafka 2.16 sends 3 with
    Metadata v12): the request is answered."""
    client = raw_client(ctx)
    out: dict[str, Any] = {}
    for label, key, version, fields in (
        ("metadata v12", 3, 12, {"topics": None, "allow_auto_topic_creation": False,
                                 "include_topic_authorized_operations": False}),
        ("api-versions v3", 18, 3, {"client_software_name": "raw", "client_software_version": "1"}),
    ):  # fmt: skip
        correlation, payload = client.encode(key, version, **fields)
        answer = _frame_answer(client, payload + b"\x00\x01\x00")
        if answer is None:
            out[label] = "connection closed"
            client = raw_client(ctx)
            continue
        body = client.decode(key, version, correlation, answer)
        out[label] = {"answered": True, "error": getattr(body, "error_code", 0)}
    client.close()
    return out


@scenario("bad-input/produce", RAW, quick=True)
def bad_produce(ctx: Ctx, _client: object) -> Observation:
    """Produce to an unknown topic, with a wrong magic byte, with a corrupt CRC, and a
    record larger than max.message.bytes: each gets its error code."""
    topic = ctx.name("bad-produce")
    create_topic(ctx.bootstrap, topic)
    corrupt = bytearray(batch([b"v"]))
    corrupt[-1] ^= 0xFF  # the CRC covers the records: flip a byte of the last one
    return {
        "unknown topic": _produce_code(ctx, ctx.name("never-created"), batch([b"v"])),
        "magic 1 batch": _produce_code(ctx, topic, batch([b"v"], magic=1)),
        "corrupt crc": _produce_code(ctx, topic, bytes(corrupt)),
        "2 MiB record": _produce_code(ctx, topic, batch([b"x" * (2 << 20)])),
        "good": _produce_code(ctx, topic, batch([b"v"])),
    }


@scenario("bad-input/unknown-topic-reads", RAW, quick=True)
def unknown_topic_reads(ctx: Ctx, _client: object) -> Observation:
    """Fetch and ListOffsets on a topic that does not exist."""
    client = raw_client(ctx)
    missing = ctx.name("missing")
    try:
        fetched = client.fetch(missing, 0)
        fetch_codes = [p.error_code.name for t in fetched.responses for p in t.partitions]
        listed = client.request(
            2, 7, replica_id=-1, isolation_level=0,
            topics=(_list_topic(missing),),
        )  # fmt: skip
        list_codes = [p.error_code.name for t in listed.topics for p in t.partitions]
    finally:
        client.close()
    return {"fetch": fetch_codes, "list-offsets": list_codes}


def _list_topic(name: str) -> Any:
    part = ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)
    return ListOffsetsTopic(name=TopicName(name), partitions=(part,))


def _init_producer_id(client: RawClient, within: float = 30.0) -> tuple[int, int]:
    """A producer id, asked for again while the broker answers a retriable error: a
    freshly started Kafka has no producer-id block from its controller yet, and a
    batch stamped with the -1 it answers then is not idempotent at all."""
    deadline = time.monotonic() + within
    while True:
        answer = client.request(
            22, 4, transactional_id=None, transaction_timeout=datetime.timedelta(0),
            producer_id=-1, producer_epoch=-1,
        )  # fmt: skip
        if answer.error_code.name == "none":
            return answer.producer_id, answer.producer_epoch
        if time.monotonic() > deadline:
            raise TimeoutError(f"InitProducerId still answers {answer.error_code.name}")
        time.sleep(0.2)


@scenario("produce/idempotent-retries", RAW, quick=True)
def idempotent_retries(ctx: Ctx, _client: object) -> Observation:
    """An idempotent producer's retries, sent exactly: a retried batch (the last one,
    or an older one of the last five) is answered with its original offset and stored
    once; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER."""
    topic = ctx.name("idem-retry")
    create_topic(ctx.bootstrap, topic)
    client = raw_client(ctx, topic)
    try:
        stamp = _init_producer_id(client)

        def send(sequence: int, values: list[bytes]) -> Any:
            code, offset = client.produce(topic, batch(values, producer=(*stamp, sequence)))
            return [code.name, offset if code.name == "none" else None]

        steps = {
            "seq 0": send(0, [b"a", b"b"]),
            "seq 0 again": send(0, [b"a", b"b"]),
            "seq 2": send(2, [b"c"]),
            "seq 0 once more": send(0, [b"a", b"b"]),
            "seq 10 (a gap)": send(10, [b"x"]),
            "seq 3": send(3, [b"d"]),
        }
        latest = client.request(
            2, 7, replica_id=-1, isolation_level=0, topics=(_list_topic(topic),)
        )
        steps["high watermark"] = latest.topics[0].partitions[0].offset
    finally:
        client.close()
    return steps
