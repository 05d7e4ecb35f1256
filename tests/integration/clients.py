"""The same produce/consume done by unmodified Kafka clients: the conformance
suite's drivers (conformance/clients), under the names the tests use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.clients.aiokafka_client import AioKafka
from conformance.clients.kafka_python import KafkaPython
from conformance.clients.librdkafka import ConfluentKafka
from conformance.model import Rec

__all__ = ["CONSUMERS", "PRODUCERS", "Rec", "cf_consume", "cf_produce", "kp_consume"]

Header = tuple[str, bytes | None]
_CONFLUENT, _KAFKA_PYTHON, _AIOKAFKA = ConfluentKafka(), KafkaPython(), AioKafka()


def sample_records(n: int, base_ts: int = 1_700_000_000_000) -> list[Rec]:
    """Keys (binary and text, some null), null values, headers (repeated, binary), timestamps."""
    out = []
    for i in range(n):
        value = None if i % 5 == 4 else (f"value-{i}-".encode() * (1 + i % 4))
        key = bytes([0xFF, i % 256, 0]) if i % 2 else f"key-{i}".encode()
        if i % 7 == 3 and value is not None:  # aiokafka refuses a record with neither
            key = None
        headers: tuple[Header, ...] = ()
        if i % 3 == 0:
            headers = (("trace", f"t{i}".encode()), ("bin", b"\x00\xff"), ("trace", b"again"))
        elif i % 3 == 1:
            headers = (("a", b"1"), ("b", b"2"))
        out.append(Rec(key, value, headers, base_ts + i * 10))
    return out


def cf_produce(
    bootstrap: str, topic: str, recs: list[Rec], compression: str | None, **extra: Any
) -> list[int]:
    """confluent-kafka; `extra` is librdkafka configuration."""
    return _CONFLUENT.produce(bootstrap, topic, recs, compression=compression, **extra)


def cf_consume(
    bootstrap: str, topic: str, n: int, start: int = 0, reset: str = "latest"
) -> list[Rec]:
    """The first `n` records from `start` (fewer after 30 s); `reset` is the
    auto.offset.reset policy applied when `start` is out of range."""
    return _CONFLUENT.consume(bootstrap, topic, n, start=start, reset=reset)


def kp_consume(bootstrap: str, topic: str, n: int, start: int = 0) -> list[Rec]:
    return _KAFKA_PYTHON.consume(bootstrap, topic, n, start=start)


def _producer(client: Any) -> Callable[[str, str, list[Rec], str | None], list[int]]:
    def produce(bootstrap: str, topic: str, recs: list[Rec], compression: str | None) -> list[int]:
        return list(client.produce(bootstrap, topic, recs, compression=compression))

    return produce


PRODUCERS = {c.name: _producer(c) for c in (_KAFKA_PYTHON, _CONFLUENT, _AIOKAFKA)}
CONSUMERS: dict[str, Callable[..., list[Rec]]] = {
    "kafka-python": kp_consume,
    "confluent-kafka": cf_consume,
    "aiokafka": _AIOKAFKA.consume,
}
