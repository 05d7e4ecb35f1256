"""Produce and consume: what is stored is what comes back, at the offsets the
producer was told."""

from __future__ import annotations

import time

from conformance.clients import LIBRARIES
from conformance.clients.base import Client, ClientError
from conformance.model import Ctx, Observation, Rec, scenario
from conformance.setup import create_topic

BASE_TS = 1_700_000_000_000


def sample(n: int) -> list[Rec]:
    """Text and binary keys, null keys and values, repeated and binary headers."""
    out = []
    for i in range(n):
        value = None if i % 5 == 4 else f"value-{i}-".encode() * (1 + i % 4)
        key: bytes | None = bytes([0xFF, i % 256, 0]) if i % 2 else f"key-{i}".encode()
        if i % 7 == 3 and value is not None:
            key = None
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if i % 3 == 0:
            headers = (("trace", f"t{i}".encode()), ("bin", b"\x00\xff"), ("trace", b"again"))
        elif i % 3 == 1:
            headers = (("a", b"1"), ("b", b""))
        out.append(Rec(key, value, headers, BASE_TS + i * 10))
    return out


def round_trip(
    ctx: Ctx, client: Client, logical: str, recs: list[Rec], **produce: object
) -> Observation:
    topic = ctx.name(logical)
    create_topic(ctx.bootstrap, topic)
    offsets = client.produce(ctx.bootstrap, topic, recs, **produce)  # type: ignore[arg-type]
    got = client.consume(ctx.bootstrap, topic, len(recs))
    return {"offsets": offsets, "records": [r.seen() for r in got]}


@scenario("produce/records", LIBRARIES, quick=True)
def records(ctx: Ctx, client: Client) -> Observation:
    """Keys (text, binary, null), null values, repeated and binary headers, timestamps."""
    return round_trip(ctx, client, "records", sample(30))


@scenario("produce/codecs", LIBRARIES)
def codecs(ctx: Ctx, client: Client) -> Observation:
    """Every codec the client has: gzip, snappy, lz4, zstd and none."""
    return {
        codec: round_trip(ctx, client, f"codec-{codec}", sample(20), compression=codec)
        for codec in client.codecs
    }


@scenario("produce/idempotent", LIBRARIES, quick=True)
def idempotent(ctx: Ctx, client: Client) -> Observation:
    """enable.idempotence=true (the Java client's default)."""
    return round_trip(ctx, client, "idem", sample(50), idempotent=True)


@scenario("produce/partitions", LIBRARIES)
def partitions(ctx: Ctx, client: Client) -> Observation:
    """Records to chosen partitions of a 3-partition topic: offsets per partition."""
    topic = ctx.name("parts")
    create_topic(ctx.bootstrap, topic, 3)
    recs = [
        Rec(f"k{i}".encode(), f"v{i}".encode(), (), BASE_TS + i, partition=i % 3) for i in range(12)
    ]
    offsets = client.produce(ctx.bootstrap, topic, recs)
    seen = {
        p: [r.seen() for r in client.consume(ctx.bootstrap, topic, 4, partition=p)]
        for p in range(3)
    }
    return {"offsets": offsets, "records": seen}


@scenario("produce/large-records", LIBRARIES)
def large_records(ctx: Ctx, client: Client) -> Observation:
    """Records of 1.5 and 3 MiB to a topic with max.message.bytes=4 MiB are stored
    and read back; 5 MiB is refused."""
    topic = ctx.name("large")
    create_topic(ctx.bootstrap, topic, configs={"max.message.bytes": str(4 << 20)})
    big = [Rec(b"k1", b"a" * (3 << 19), (), BASE_TS), Rec(b"k2", b"b" * (3 << 20), (), BASE_TS)]
    offsets = client.produce(ctx.bootstrap, topic, big, max_request_bytes=16 << 20)
    got = client.consume(ctx.bootstrap, topic, 2)
    try:
        too_big = client.produce(
            ctx.bootstrap, topic, [Rec(None, b"c" * (5 << 20), (), BASE_TS)],
            max_request_bytes=16 << 20,
        )  # fmt: skip
        refused: object = {"offsets": too_big}
    except ClientError as exc:
        refused = exc.name
    return {
        "offsets": offsets,
        "read back": [(r.offset, (r.key or b"").decode(), len(r.value or b"")) for r in got],
        "5 MiB": refused,
    }


@scenario("topics/1000-partitions", ("confluent-kafka",))
def thousand_partitions(ctx: Ctx, client: Client) -> Observation:
    """One topic of 1,000 partitions: metadata lists them all, and records sent to the
    first, a middle and the last partition are read back from each."""
    topic = ctx.name("wide")
    create_topic(ctx.bootstrap, topic, 1000)
    chosen = (0, 499, 999)
    recs = [Rec(f"k{p}".encode(), f"v{p}".encode(), (), BASE_TS, partition=p) for p in chosen]
    offsets = client.produce(ctx.bootstrap, topic, recs)
    seen = {
        p: [r.seen() for r in client.consume(ctx.bootstrap, topic, 1, partition=p)] for p in chosen
    }
    return {"offsets": offsets, "records": seen}


@scenario("produce/client-timestamps", LIBRARIES, quick=True)
def client_timestamps(ctx: Ctx, client: Client) -> Observation:
    """Records without an explicit timestamp (the client stamps them, as most
    applications do): text keys, a null key, headers; every record comes back with a
    CreateTime in the few minutes around the send."""
    topic = ctx.name("stamped")
    create_topic(ctx.bootstrap, topic)
    recs = [
        Rec(f"key-{i}".encode() if i % 3 else None, f"value {i}".encode(),
            (("n", str(i).encode()),) if i % 2 else ())
        for i in range(12)
    ]  # fmt: skip
    before = int(time.time() * 1000)
    offsets = client.produce(ctx.bootstrap, topic, recs)
    got = client.consume(ctx.bootstrap, topic, len(recs))
    after = int(time.time() * 1000)
    seen = [
        {**r.seen(), "timestamp": before - 60_000 <= r.timestamp <= after + 60_000} for r in got
    ]
    return {"offsets": offsets, "records": seen}
