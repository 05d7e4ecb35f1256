"""What the bounds pass (`kop.protocol.bounds`) costs per request, in one process:

    python -m bench.request_bounds

Produce v9 requests as librdkafka sends them (one topic; 1 or 16 partitions; a
250-record batch of 1 KiB or 12-byte values), and the largest requests the
element budget lets through (Fetch v12 of 99,999 partitions, Metadata v1 of
100,000 topics): the bounds pass alone, and `decode_request` (the pass plus
kio), in microseconds per request. The last two are the longest one frame can
hold kop's event loop in decoding.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from kio.index import load_request_schema

from fuzz.seeds import encode
from kop.protocol.bounds import DEFAULT_MAX_ELEMENTS, check_request
from kop.protocol.messages import decode_request
from kop.protocol.records import Record, build_batch


def _produce(partitions: int, value_bytes: int) -> bytes:
    schema = load_request_schema(0, 9)
    topic_cls = schema.__dataclass_fields__["topic_data"].type.__args__[0]
    part_cls = topic_cls.__dataclass_fields__["partition_data"].type.__args__[0]
    batch = build_batch([Record(i, 0, None, os.urandom(value_bytes)) for i in range(250)])
    parts = tuple(part_cls(index=p, records=batch) for p in range(partitions))
    body = schema(
        transactional_id=None,
        acks=1,
        timeout=datetime.timedelta(seconds=30),
        topic_data=(topic_cls(name="bench", partition_data=parts),),
    )
    return encode(0, 9, body, 1, "rdkafka")


def _fetch(partitions: int) -> bytes:
    schema = load_request_schema(1, 12)
    topic_cls = schema.__dataclass_fields__["topics"].type.__args__[0]
    part_cls = topic_cls.__dataclass_fields__["partitions"].type.__args__[0]
    parts = tuple(
        part_cls(
            partition=i,
            current_leader_epoch=-1,
            fetch_offset=0,
            last_fetched_epoch=-1,
            log_start_offset=-1,
            partition_max_bytes=1 << 20,
        )
        for i in range(partitions)
    )
    body = schema(
        replica_id=-1,
        max_wait=datetime.timedelta(milliseconds=500),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(topic_cls(topic="bench", partitions=parts),),
        forgotten_topics_data=(),
        rack_id="",
    )
    return encode(1, 12, body, 1, "consumer")


def _metadata(topics: int) -> bytes:
    schema = load_request_schema(3, 1)
    topic_cls = schema.__dataclass_fields__["topics"].type.__args__[0].__args__[0]
    return encode(3, 1, schema(topics=tuple(topic_cls(name="") for _ in range(topics))), 1, None)


def _per_call(fn: Callable[[], Any], seconds: float) -> float:
    calls = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        fn()
        calls += 1
    return elapsed / calls


def main() -> int:
    cases = [
        ("Produce v9, 1 partition, 250 x 1 KiB", _produce(1, 1024)),
        ("Produce v9, 1 partition, 250 x 12 B", _produce(1, 12)),
        ("Produce v9, 16 partitions, 250 x 64 B", _produce(16, 64)),
        (f"Fetch v12, {DEFAULT_MAX_ELEMENTS - 1:,} partitions", _fetch(DEFAULT_MAX_ELEMENTS - 1)),
        (f"Metadata v1, {DEFAULT_MAX_ELEMENTS:,} topics", _metadata(DEFAULT_MAX_ELEMENTS)),
    ]
    print(f"{'request':42} {'bytes':>10} {'bounds us':>10} {'decode us':>10} {'share':>6}")
    for name, frame in cases:
        schema = load_request_schema(int.from_bytes(frame[:2]), int.from_bytes(frame[2:4]))
        bounds = _per_call(lambda f=frame, s=schema: check_request(s.__header_schema__, s, f), 1.0)
        decode = _per_call(lambda f=frame: decode_request(f), 1.0)
        print(
            f"{name:42} {len(frame):>10,} {bounds * 1e6:>10.1f} {decode * 1e6:>10.1f} "
            f"{bounds / decode:>6.0%}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
