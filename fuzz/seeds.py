"""Well-formed request frames for every API and version kop advertises (beside
the frames real clients sent, kept in tests/corpus/seeds by `fuzz.capture`).

Built from kio's own schemas with plausible values (existing topic names,
partition 0-3, a real record batch in Produce, small timeouts), so that
mutations of them reach the handlers and not only the decoder. Deterministic
for a given `random.Random`.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import random
import uuid
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema
from kio.serial import entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from kop.protocol.messages import SUPPORTED_VERSIONS, ApiKey
from kop.protocol.records import Record, build_batch


@dataclass(frozen=True, slots=True)
class Seed:
    api_key: int
    version: int
    frame: bytes  # without the size prefix


@dataclass(frozen=True, slots=True)
class Names:
    """The names seeds use: topics and groups that exist on the target are reached."""

    topics: tuple[str, ...] = ("fuzz-0", "fuzz-1")
    groups: tuple[str, ...] = ("fuzz-group",)


def supported_cases() -> list[tuple[int, int]]:
    return [(int(k), v) for k, (lo, hi) in SUPPORTED_VERSIONS.items() for v in range(lo, hi + 1)]


def seed(api_key: int, version: int, rng: random.Random, names: Names = Names()) -> Seed:
    body = _Sampler(rng, names).entity(load_request_schema(api_key, version))
    correlation_id = rng.randrange(1 << 31)
    client_id = rng.choice(["fuzz", "kafka-python-3.0.12", None])
    return Seed(api_key, version, encode(api_key, version, body, correlation_id, client_id))


def encode(
    api_key: int, version: int, body: Any, correlation_id: int, client_id: str | None
) -> bytes:
    """A request frame (no size prefix) as a client writes it."""
    schema = load_request_schema(api_key, version)
    header_cls: Any = schema.__header_schema__
    header = header_cls(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    out = io.BytesIO()
    entity_writer(header_cls)(out, header)
    entity_writer(schema)(out, body)
    return out.getvalue()


def all_seeds(rng: random.Random, per_case: int = 1, names: Names = Names()) -> list[Seed]:
    return [seed(k, v, rng, names) for k, v in supported_cases() for _ in range(per_case)]


def session_seeds(rng: random.Random, names: Names = Names()) -> list[Seed]:
    """Fetch frames shaped as a KIP-227 session's (v7+): one opening it (epoch 0), ones
    continuing a session at a few epochs (ids guessed: a live kop answers them
    FETCH_SESSION_ID_NOT_FOUND unless one is right), naming and forgetting partitions,
    and one closing it (epoch -1), so mutants reach the session cache's paths."""
    seeds = []
    for version in range(7, SUPPORTED_VERSIONS[ApiKey.FETCH][1] + 1):
        schema = load_request_schema(1, version)
        for session_id, epoch in ((0, 0), (rng.randrange(1, 1 << 31), 1), (1, 2), (1, -1)):
            base = _Sampler(rng, names).entity(schema)
            body = dataclasses.replace(base, session_id=session_id, session_epoch=epoch)
            frame = encode(1, version, body, rng.randrange(1 << 31), "fuzz")
            seeds.append(Seed(1, version, frame))
    return seeds


class _Sampler:
    def __init__(self, rng: random.Random, names: Names) -> None:
        self._rng = rng
        self._names = names

    def entity(self, cls: type[Any]) -> Any:
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            tagged = get_field_tag(field) is not None
            if tagged and self._rng.random() < 0.5 and _has_default(field):
                continue
            values[field.name] = self.field(field, tagged)
        return cls(**values)

    def field(self, field: dataclasses.Field[Any], tagged: bool) -> Any:
        kind = classify_field(field)
        optional = is_optional(field) and not tagged
        if optional and self._rng.random() < 0.15:
            return None
        if isinstance(kind, PrimitiveField):
            return self.primitive(get_schema_field_type(field), field.name)
        if isinstance(kind, EntityField):
            return self.entity(kind.type_)
        count = self._rng.choice([0, 1, 1, 2, 3])
        if isinstance(kind, PrimitiveTupleField):
            kafka_type = get_schema_field_type(field)
            return tuple(self.primitive(kafka_type, field.name) for _ in range(count))
        assert isinstance(kind, EntityTupleField)
        return tuple(self.entity(kind.type_) for _ in range(count))

    def primitive(self, kafka_type: str, name: str) -> Any:
        rng = self._rng
        if kafka_type == "string":
            if "topic" in name or name == "name":
                return rng.choice(self._names.topics)
            if "group" in name:
                return rng.choice(self._names.groups)
            return rng.choice(["", "fuzz", "range", "consumer", "x" * rng.randrange(1, 40)])
        if kafka_type == "bytes":
            return rng.randbytes(rng.randrange(0, 24))
        if kafka_type == "records":
            return _records(rng)
        if kafka_type == "bool":
            return rng.random() < 0.5
        if kafka_type == "uuid":
            return uuid.UUID(int=rng.getrandbits(128)) if rng.random() < 0.5 else uuid.UUID(int=0)
        if kafka_type.startswith("timedelta"):
            return datetime.timedelta(milliseconds=rng.choice([0, 100, 500, 6000, 30000]))
        if kafka_type == "float64":  # quota values: the edges AlterClientQuotas must refuse
            return rng.choice([0.0, 1.0, 1024.5, -1.0, 1e308, float("nan"), float("inf")])
        bits = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}[kafka_type]
        if name == "resource_type":  # config and ACL resources kop serves, and ones it does not
            return rng.choice([2, 3, 4, 5, 8, 16, 32, 0, -1])
        if "partition" in name or "index" in name:
            return rng.randrange(4)
        if "timeout" in name or "wait" in name:
            return rng.choice([0, 100, 500])
        return rng.choice([-1, 0, 1, 2, rng.randrange(1 << bits)])


def _records(rng: random.Random) -> bytes:
    records = [
        Record(i, 1_700_000_000_000 + i, rng.choice([None, b"k%d" % i]), rng.randbytes(8), ())
        for i in range(rng.randrange(1, 4))
    ]
    return build_batch(records, compression=rng.choice([0, 0, 1, 2, 3, 4]))


def _has_default(field: dataclasses.Field[Any]) -> bool:
    return (
        field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
    )
