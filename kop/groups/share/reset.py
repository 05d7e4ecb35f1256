"""`share.auto.offset.reset`: where a share group's new subscription on a partition
starts, as Kafka 4.3 reads the setting (ShareGroupAutoOffsetResetStrategy): `earliest`,
`latest`, or `by_duration:<duration>`, the first record written within that duration
before now (the partition's end when none was).

The duration is Java's `Duration.parse` format (ISO-8601 `PnDTnHnMn.nS`: days at most,
signs per part, a fraction of seconds to nanoseconds), parsed here by the same grammar
rather than by a general ISO-8601 library, which takes years and months that Kafka
refuses; a negative duration is refused as Kafka refuses it.
"""

from __future__ import annotations

import re

EARLIEST, LATEST, BY_DURATION = "earliest", "latest", "by_duration:"

# java.time.Duration's pattern, case-insensitive
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)
_MAX_DIGITS = 19  # a part longer than a Java long overflows there


def reset_value(text: str) -> str | None:
    """The setting normalized (`earliest`, `latest`, `by_duration:<as given>`), or None
    when Kafka refuses it."""
    lowered = text.lower()
    if lowered in (EARLIEST, LATEST):
        return lowered
    if not text.startswith(BY_DURATION):
        return None
    return text if duration_ms(text) is not None else None


def duration_ms(text: str) -> int | None:
    """A `by_duration:` setting's duration in milliseconds (None: not one, or not a
    duration Kafka takes)."""
    if not text.startswith(BY_DURATION):
        return None
    m = _DURATION.fullmatch(text[len(BY_DURATION) :])
    if m is None or (m.group(3) is not None and m.group(3).upper() == "T"):
        return None  # Java: "T" must be followed by a part
    sign, days, _t, hours, minutes, seconds, fraction = m.groups()
    if days is None and hours is None and minutes is None and seconds is None:
        return None
    if any(
        p is not None and len(p.lstrip("+-")) > _MAX_DIGITS for p in (days, hours, minutes, seconds)
    ):
        return None
    nanos = (
        int(days or 0) * 86_400 * 10**9
        + int(hours or 0) * 3_600 * 10**9
        + int(minutes or 0) * 60 * 10**9
        + int(seconds or 0) * 10**9
    )
    if fraction:
        part = int(fraction.ljust(9, "0"))
        nanos += -part if (seconds or "").startswith("-") else part
    if sign == "-":
        nanos = -nanos
    if nanos < 0 or nanos >= 2**63 * 10**9:
        return None
    return nanos // 10**6
