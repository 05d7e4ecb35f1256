"""A produced batch meets its topic's configs as on Kafka: CreateTime records
outside the timestamp window are INVALID_TIMESTAMP (each one named), LogAppendTime
topics serve the append time, compression.type recompresses, and batches that
need none of it pass untouched (the `kafka` format's fast path)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kop.log.batch_rules import CODECS, BatchRules, InvalidTimestamps
from kop.protocol.batch_rewrite import as_log_append_time, stamp
from kop.protocol.errors import ErrorCode
from kop.protocol.records import (
    TIMESTAMP_TYPE_MASK,
    Record,
    build_batch,
    iter_records,
    read_header,
    split_batches,
)
from kop.topics.configs import TopicDefaults

NOW = 1_800_000_000_000
LIMIT = 1 << 20
DEFAULTS = TopicDefaults().configs()

times = st.one_of(st.just(-1), st.integers(NOW - 10**10, NOW + 10**10))
records = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=16)), st.binary(max_size=64), times),
    min_size=1,
    max_size=20,
)


def _batch(raw: list[tuple[bytes | None, bytes, int]], codec: int = 0) -> bytes:
    recs = [Record(i, ts, key, value, (("h", b"v"),)) for i, (key, value, ts) in enumerate(raw)]
    # As a client sends it: the first record's time is the batch's base time.
    return build_batch(recs, compression=codec, producer_id=7, producer_epoch=1, base_sequence=3)


def _apply(rules: BatchRules, data: bytes, pulsar: bool = False) -> tuple[object, bytes]:
    return rules.apply((read_header(data), data), NOW, records_have_times=pulsar, limit=LIMIT)


def _rules(**configs: str) -> BatchRules:
    return BatchRules.of({**DEFAULTS, **{k.replace("_", "."): v for k, v in configs.items()}})


def test_the_defaults_are_kafkas() -> None:
    assert _rules() == BatchRules(False, (1 << 63) - 1, 3_600_000, None)


@given(records, st.integers(0, 10**10), st.integers(0, 10**10))
def test_records_outside_the_window_are_refused_each_by_index(
    raw: list[tuple[bytes | None, bytes, int]], before: int, after: int
) -> None:
    data = _batch(raw)
    rules = BatchRules(before_max_ms=before, after_max_ms=after)
    bad = [
        i for i, (_, _, ts) in enumerate(raw) if ts != -1 and not NOW - before <= ts <= NOW + after
    ]
    try:
        _, out = _apply(rules, data)
    except InvalidTimestamps as exc:
        assert exc.code == ErrorCode.invalid_timestamp
        assert [i for i, _ in exc.record_errors] == bad
        i, message = exc.record_errors[0]
        assert message == (
            f"Timestamp {raw[i][2]} of message with offset {i} is out of range. "
            f"The timestamp should be within [{NOW - before}, {NOW + after}]"
        )
    else:
        assert bad == []
        assert out == data  # nothing to change: the very bytes the producer sent


def test_a_record_an_hour_ahead_is_refused_by_default() -> None:
    with pytest.raises(InvalidTimestamps):
        _apply(_rules(), _batch([(None, b"v", NOW), (None, b"w", NOW + 3_600_001)]))
    _apply(_rules(), _batch([(None, b"v", NOW - 10**12), (None, b"w", NOW + 3_600_000)]))


@given(records, st.sampled_from(sorted(CODECS.values())))
def test_log_append_time_in_the_kafka_format_stamps_the_header_only(
    raw: list[tuple[bytes | None, bytes, int]], codec: int
) -> None:
    data = _batch(raw, codec)
    _, out = _apply(_rules(message_timestamp_type="LogAppendTime"), data)
    ((checked, _),) = split_batches(out, max_batch_bytes=LIMIT)  # the CRC holds
    assert checked.attributes & TIMESTAMP_TYPE_MASK
    assert checked.max_timestamp == NOW
    assert out[61:] == data[61:]  # records untouched, as Kafka's in-place validation
    # A consumer reads every record at the append time (no window applies to it).
    assert {r.timestamp for r in iter_records(out)} == {NOW}


@given(records)
def test_log_append_time_in_the_pulsar_format_is_written_into_the_records(
    raw: list[tuple[bytes | None, bytes, int]],
) -> None:
    _, out = _apply(_rules(message_timestamp_type="LogAppendTime"), _batch(raw), pulsar=True)
    # What the pulsar format stores: each record's own time.
    assert {r.timestamp for r in iter_records(out, create_time=True)} == {NOW}
    assert [r.value for r in iter_records(out)] == [v for _, v, _ in raw]


@given(records, st.sampled_from(sorted(CODECS)), st.sampled_from(sorted(CODECS.values())))
def test_compression_type_recompresses_and_keeps_every_record(
    raw: list[tuple[bytes | None, bytes, int]], target: str, sent: int
) -> None:
    data = _batch(raw, sent)
    rules = _rules(compression_type=target, message_timestamp_after_max_ms=str(10**11))
    _, out = _apply(rules, data)
    ((checked, _),) = split_batches(out, max_batch_bytes=LIMIT)
    assert checked.compression == CODECS[target]
    assert (checked.producer_id, checked.producer_epoch, checked.base_sequence) == (7, 1, 3)
    assert list(iter_records(out)) == list(iter_records(data))


def test_a_client_cannot_claim_log_append_time_on_a_create_time_topic() -> None:
    data = _batch([(None, b"v", NOW - 5), (None, b"w", NOW)])
    _, claimed = stamp(data, log_append_time=True, max_timestamp=NOW + 10**9)
    _, out = _apply(_rules(), claimed)
    assert not read_header(out).attributes & TIMESTAMP_TYPE_MASK
    assert [r.timestamp for r in iter_records(out)] == [NOW - 5, NOW]


@given(st.lists(st.lists(times, min_size=1, max_size=4), min_size=1, max_size=5))
def test_fetched_batches_of_one_time_are_served_as_log_append_time(
    batches: list[list[int]],
) -> None:
    # Times in the order producers stamp them (a batch whose first record is its latest
    # and another one earlier is also marked: see docs/compatibility.md).
    batches = [sorted(b) for b in batches]
    datas = [_batch([(None, b"x", ts) for ts in b]) for b in batches]
    out = as_log_append_time(b"".join(datas))
    pos = 0
    for b in batches:
        head = read_header(out, pos)
        one_time = len(set(b)) == 1
        assert bool(head.attributes & TIMESTAMP_TYPE_MASK) == one_time
        served = out[pos : pos + head.length]
        split_batches(served, max_batch_bytes=LIMIT)  # the CRC holds
        assert [r.timestamp for r in iter_records(served)] == b
        pos += head.length
    assert pos == len(out)
