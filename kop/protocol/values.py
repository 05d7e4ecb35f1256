"""Values typed answers carry often, built once (kio's field types check their range
when made, so a constant is made at import, not per answer)."""

from __future__ import annotations

import datetime
from typing import cast

from kio.static.primitive import TZAware, i32Timedelta

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))  # throttle_time: kop answers at once


def kafka_time(ms: int) -> TZAware:
    """A Kafka timestamp (ms since the epoch) for a non-null datetime field; -1, Kafka's
    "none", is the instant 1 ms before the epoch, which kio writes back as -1.

    Not `TZAware.parse`: its predicate refuses what Kafka's wire carries, times before
    the epoch (-1) and any time with a millisecond part (it demands microsecond == 0,
    whole seconds). kio's writer takes any aware datetime (round(timestamp * 1000)), so
    the value is only named TZAware here, unchecked."""
    return cast(TZAware, datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC))


def milliseconds(ms: int) -> i32Timedelta:
    """A duration field (heartbeat intervals, lock timeouts) of `ms` milliseconds."""
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))
