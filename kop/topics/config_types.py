"""Kafka's config value types and validators, as its brokers parse topic configs.

A value is parsed the way Kafka's `ConfigDef` parses it (trimmed; Java's number
and boolean grammars) and kept in Kafka's canonical form (`" 100"` is stored and
described as `100`, `TRUE` as `true`, `.5` as `0.5`, `delete, compact` as
`delete,compact`), so a client reads back what it would read from Kafka. A bad
value raises INVALID_CONFIG with Kafka's own message, which tools print.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import IntEnum

from kop.protocol.errors import ErrorCode, KafkaError

_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_WHITESPACE = "".join(chr(c) for c in range(0x21))  # what Java's String.trim() strips


class ConfigType(IntEnum):
    """DescribeConfigs' config_type (KIP-569)."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


def invalid(name: str, value: object, why: str) -> KafkaError:
    return KafkaError(
        ErrorCode.invalid_config, f"Invalid value {value} for configuration {name}: {why}"
    )


def java_trim(value: str) -> str:
    return value.strip(_JAVA_WHITESPACE)


Parsed = bool | int | float | str | list[str]
Validator = Callable[[str, Parsed], None]


def parse(kind: ConfigType, name: str, raw: str) -> Parsed:
    """`raw` as Kafka's ConfigDef.parseType reads it; INVALID_CONFIG if it cannot."""
    value = java_trim(raw)
    if kind == ConfigType.BOOLEAN:
        if value.lower() not in ("true", "false"):
            raise invalid(name, raw, "Expected value to be either true or false")
        return value.lower() == "true"
    if kind in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
        low, high = _INT64 if kind == ConfigType.LONG else _INT32
        if _INTEGER.fullmatch(value) is None or not low <= int(value) <= high:
            raise invalid(name, raw, f"Not a number of type {kind.name}")
        return int(value)
    if kind == ConfigType.DOUBLE:
        if _DOUBLE.fullmatch(value) is None:
            raise invalid(name, raw, "Not a number of type DOUBLE")
        return float(value.rstrip("fFdD").replace("Infinity", "inf"))
    if kind == ConfigType.LIST:
        return [] if not value else [java_trim(item) for item in value.split(",")]
    return value


def canonical(kind: ConfigType, value: Parsed) -> str:
    """The value as Kafka describes it after parsing (Java's toString)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(dict.fromkeys(value))  # Kafka keeps each item once
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def java_double(x: float) -> str:
    """Java's Double.toString: plain between 1e-3 and 1e7, else d.dddE±n."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = f"{Decimal(repr(x)):f}"
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    point = exponent + len(mantissa) - 1
    tail = mantissa[1:] or "0"
    return f"{'-' if sign else ''}{mantissa[0]}.{tail}E{point}"


@dataclass(frozen=True, slots=True)
class Range:
    """Kafka's Range.atLeast / between (the bounds are printed as Kafka prints them)."""

    low: float | None = None
    high: float | None = None

    def __call__(self, name: str, value: Parsed) -> None:
        assert isinstance(value, int | float) and not isinstance(value, bool)
        shown = canonical(ConfigType.DOUBLE, value) if isinstance(value, float) else value
        if self.low is not None and value < self.low:
            raise invalid(name, shown, f"Value must be at least {_bound(self.low)}")
        if self.high is not None and value > self.high:
            raise invalid(name, shown, f"Value must be no more than {_bound(self.high)}")


def _bound(b: float) -> str:
    return str(int(b)) if float(b).is_integer() else str(b)


@dataclass(frozen=True, slots=True)
class OneOf:
    """Kafka's ValidString (or ValidList, item by item, for a LIST)."""

    values: Sequence[str]

    def __call__(self, name: str, value: Parsed) -> None:
        items = value if isinstance(value, list) else [str(value)]
        if isinstance(value, list) and any(not item for item in items):
            raise KafkaError(
                ErrorCode.invalid_config, f"Configuration '{name}' values must not be empty."
            )
        for item in items:
            if item not in self.values:
                raise invalid(name, item, f"String must be one of: {', '.join(self.values)}")


def gzip_level(name: str, value: Parsed) -> None:
    """Kafka's GzipCompression level: Deflater's 1..9, or -1 for its default."""
    if not (value == -1 or (isinstance(value, int) and 1 <= value <= 9)):
        raise invalid(name, value, "Value must be between 1 and 9 or equal to -1")


_REPLICA = re.compile(r"[0-9]+:[0-9]+")


def throttled_replicas(name: str, value: Parsed) -> None:
    """`*`, or `partition:broker` pairs (Kafka's ThrottledReplicaListValidator)."""
    assert isinstance(value, list)
    if value == ["*"] or all(_REPLICA.fullmatch(item) for item in value):
        return
    raise invalid(
        name,
        f"[{', '.join(value)}]",
        f"{name} must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
    )
