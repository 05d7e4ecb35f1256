"""What a topic's configs do to a produced batch, as Kafka's broker validates one
(its LogValidator): CreateTime records outside `message.timestamp.before.max.ms` /
`after.max.ms` are INVALID_TIMESTAMP, `message.timestamp.type=LogAppendTime`
stamps the append time, `compression.type` other than `producer` recompresses.

The common case (CreateTime, `producer`, the default window) reads the batch
header only: per-record work is paid only by topics that ask for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from kop.protocol.batch_rewrite import stamp, with_codec
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import (
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    Record,
    build_batch,
    iter_records,
    read_header,
)

# Kafka's codec ids (batch attributes) by compression.type.
CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
NO_TIMESTAMP = -1
_BEFORE_MAX_MS = (1 << 63) - 1  # Kafka's defaults
_AFTER_MAX_MS = 3_600_000
_LEVELS = (
    (1, "compression.gzip.level", "-1"),
    (3, "compression.lz4.level", "9"),
    (4, "compression.zstd.level", "3"),
)
Batch = tuple[BatchHeader, bytes]


class InvalidTimestamps(KafkaError):
    """INVALID_TIMESTAMP with the records at fault (Produce v8+ record_errors)."""

    def __init__(self, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(
            ErrorCode.invalid_timestamp,
            "One or more records have been rejected due to invalid timestamp",
        )
        self.record_errors = record_errors


@dataclass(frozen=True, slots=True)
class BatchRules:
    log_append_time: bool = False
    before_max_ms: int = _BEFORE_MAX_MS
    after_max_ms: int = _AFTER_MAX_MS
    codec: int | None = None  # None: the producer's
    levels: tuple[tuple[int, int], ...] = ()  # (codec, compression level) set by the topic

    @classmethod
    def of(cls, configs: Mapping[str, str]) -> BatchRules:
        return cls(
            configs.get("message.timestamp.type") == "LogAppendTime",
            int(configs.get("message.timestamp.before.max.ms", _BEFORE_MAX_MS)),
            int(configs.get("message.timestamp.after.max.ms", _AFTER_MAX_MS)),
            CODECS.get(configs.get("compression.type", "producer")),
            tuple(
                (codec, int(configs[name]))
                for codec, name, default in _LEVELS
                if configs.get(name, default) != default
            ),
        )

    def per_record(self, head: BatchHeader, records_have_times: bool) -> bool:
        """Whether applying the rules to this batch decompresses or decodes it."""
        return self.codec not in (None, head.compression) or (
            self.log_append_time and records_have_times
        )

    def apply(self, batch: Batch, now_ms: int, *, records_have_times: bool, limit: int) -> Batch:
        """The batch as Kafka would store it. `records_have_times`: the entry format
        keeps each record's own time (`pulsar`), so LogAppendTime must be written
        into the records, not only into the header. Raises InvalidTimestamps, or
        KafkaError for a batch that does not decode within `limit` bytes."""
        head, data = batch
        codec = head.compression if self.codec is None else self.codec
        if not self.log_append_time:
            self._check_times(head, data, now_ms, limit)
        elif records_have_times:
            records = iter_records(data, limit=limit, create_time=True)
            data = build_batch(
                [replace(r, timestamp=now_ms) for r in records],
                producer_id=head.producer_id,
                producer_epoch=head.producer_epoch,
                base_sequence=head.base_sequence,
            )
            head = read_header(data)
        if codec != head.compression:
            head, data = with_codec(data, codec, dict(self.levels).get(codec), limit)
        if self.log_append_time:
            return stamp(data, log_append_time=True, max_timestamp=now_ms)
        if head.attributes & TIMESTAMP_TYPE_MASK:  # a client may not claim LogAppendTime
            return stamp(data, log_append_time=False, max_timestamp=head.max_timestamp)
        return head, data

    def _check_times(self, head: BatchHeader, data: bytes, now_ms: int, limit: int) -> None:
        low = now_ms - self.before_max_ms
        high = now_ms + self.after_max_ms
        # From the header: the largest time, and (no record can be earlier than -1
        # but by a client's mistake) whether the lower bound can matter at all.
        if head.max_timestamp <= high and low <= NO_TIMESTAMP:
            return
        errors = [
            (i, _out_of_range(r, low, high))
            for i, r in enumerate(iter_records(data, limit=limit, create_time=True))
            if r.timestamp != NO_TIMESTAMP and not low <= r.timestamp <= high
        ]
        if errors:
            raise InvalidTimestamps(errors)


def _out_of_range(record: Record, low: int, high: int) -> str:
    return (
        f"Timestamp {record.timestamp} of message with offset {record.offset} is out of "
        f"range. The timestamp should be within [{low}, {high}]"
    )
