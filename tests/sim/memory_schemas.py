"""Pulsar's schema registry in memory: the storage port's `TopicSchemas` as Pulsar 4.0
behaves (tests/integration/test_pulsar_schemas.py runs the same cases on both).

- every topic has one list of entries, numbered from 0; a delete appends a tombstone,
  which takes a number too (even when nothing is there to delete), and hides every
  entry before it: the history is what follows the last tombstone;
- an upload equal to a version in the history gets that version back, whatever the
  strategy: for AVRO, JSON and PROTOBUF equal as Java's Avro `Schema.equals` sees
  parsed schemas (docs and aliases aside), for other types the same bytes;
- else the applied strategy decides (topic policy, else namespace policy, else the
  broker's, FULL): the type must be the latest's (all versions', transitive), then
  kop.registry.strategies.check against the latest (all, transitive) for Avro-based
  types; PROTOBUF_NATIVE's checker refuses a new root message name (and, under
  ALWAYS_INCOMPATIBLE, anything new, as an "Unknown SchemaCompatibilityStrategy");
  other types are refused only by ALWAYS_INCOMPATIBLE (Pulsar's default check);
- PROTOBUF_NATIVE data must be Pulsar's JSON whose padded base64 descriptor set holds
  the root file, its imports and the root message, else 422;
- a topic policy needs the topic to exist, when `exists` is given.

`down` (or the MemoryLog's) makes every call raise StorageUnavailable, as MemoryAdmin.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import avro.errors
import avro.schema
from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from kop.registry.strategies import check
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.schemas import STRATEGIES, PulsarSchema, SchemaRefused
from kop.storage.types import AdminError, StorageUnavailable
from tests.sim.memory_log import MemoryLog

# Types whose data Pulsar parses as an Avro schema (isUsingAvroSchemaParser).
AVRO_PARSED = frozenset({"AVRO", "JSON", "PROTOBUF"})
# Types whose data must be empty (Pulsar's PrimitiveSchemaDataValidator).
PRIMITIVE = frozenset(
    {
        "STRING", "BYTES", "BOOLEAN", "INT8", "INT16", "INT32", "INT64", "FLOAT", "DOUBLE",
        "DATE", "TIME", "TIMESTAMP", "INSTANT", "LOCAL_DATE", "LOCAL_TIME", "LOCAL_DATE_TIME",
    }
)  # fmt: skip
# Types Pulsar checks with Avro's rules (AvroSchemaCompatibilityCheck and, for Avro
# definitions, JsonSchemaCompatibilityCheck); PROTOBUF gets the default check.
AVRO_CHECKED = frozenset({"AVRO", "JSON"})
KNOWN_TYPES = AVRO_PARSED | PRIMITIVE | {"NONE", "KEY_VALUE", "PROTOBUF_NATIVE"}


@dataclass(frozen=True, slots=True)
class _Entry:
    type: str
    data: str
    timestamp_ms: int
    deleted: bool = False


class MemoryTopicSchemas:
    def __init__(
        self,
        log: MemoryLog | None = None,
        *,
        broker: str = "FULL",
        exists: Callable[[PulsarTopic], bool] | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self._log = log
        self.down = False
        self.broker = broker
        self._exists = exists
        self._clock = clock or (lambda: 0)
        self.entries: dict[str, list[_Entry]] = {}  # by topic.full, tombstones included
        self.topic_policies: dict[str, str] = {}
        self.namespace_policies: dict[Namespace, str] = {}
        self.uploads = 0  # every upload asked, answered or refused

    def _up(self) -> None:
        if self.down or (self._log is not None and self._log.down):
            raise StorageUnavailable("storage admin unreachable")

    def _live(self, topic: PulsarTopic) -> list[tuple[int, _Entry]]:
        entries = self.entries.get(topic.full, [])
        last = max((i for i, e in enumerate(entries) if e.deleted), default=-1)
        return list(enumerate(entries))[last + 1 :]

    async def history(self, topic: PulsarTopic) -> list[PulsarSchema]:
        self._up()
        return [
            PulsarSchema(version, e.type, e.data, e.timestamp_ms)
            for version, e in self._live(topic)
        ]

    async def upload(self, topic: PulsarTopic, type_: str, data: str) -> int:
        self._up()
        self.uploads += 1
        if type_ not in KNOWN_TYPES:  # Pulsar's SchemaType.valueOf, unhandled
            raise AdminError(500, f"No enum constant SchemaType.{type_}")
        parsed = _validated(type_, data)
        history = self._live(topic)
        for version, e in history:
            if e.type == type_ and _same(type_, parsed, data, e.data):
                return version
        if history:
            why = _refusal(await self._applied(topic), type_, parsed, history, data)
            if why is not None:
                raise SchemaRefused(why, incompatible=True)
        entries = self.entries.setdefault(topic.full, [])
        entries.append(_Entry(type_, data, self._clock()))
        return len(entries) - 1

    async def delete(self, topic: PulsarTopic) -> None:
        self._up()
        self.entries.setdefault(topic.full, []).append(_Entry("NONE", "", self._clock(), True))

    async def topic_strategy(self, topic: PulsarTopic) -> str | None:
        self._up()
        return self.topic_policies.get(topic.full)

    async def set_topic_strategy(self, topic: PulsarTopic, strategy: str | None) -> None:
        self._up()
        _known(strategy)
        if self._exists is not None and not self._exists(topic):
            raise AdminError(404, f"Topic {topic.full} not found")
        if strategy is None:
            self.topic_policies.pop(topic.full, None)
        else:
            self.topic_policies[topic.full] = strategy

    async def namespace_strategy(self, ns: Namespace) -> str | None:
        self._up()
        return self.namespace_policies.get(ns)

    async def set_namespace_strategy(self, ns: Namespace, strategy: str | None) -> None:
        self._up()
        _known(strategy)
        if strategy is None:
            self.namespace_policies.pop(ns, None)
        else:
            self.namespace_policies[ns] = strategy

    async def broker_strategy(self) -> str:
        self._up()
        return self.broker

    async def _applied(self, topic: PulsarTopic) -> str:
        return (
            self.topic_policies.get(topic.full)
            or self.namespace_policies.get(topic.namespace)
            or self.broker
        )


def _known(strategy: str | None) -> None:
    if strategy is not None and strategy not in STRATEGIES:
        raise ValueError(f"unknown compatibility strategy {strategy!r}")


def _validated(type_: str, data: str) -> avro.schema.Schema | None:
    """The parsed Avro schema of an Avro-based type (None for others); refuses what
    Pulsar's validators refuse with 422."""
    if type_ in PRIMITIVE and data:
        raise SchemaRefused(
            f"Invalid schema definition data for {type_} schema", incompatible=False
        )
    if type_ == "PROTOBUF_NATIVE":
        _root_of_native(data)
    if type_ not in AVRO_PARSED:
        return None
    try:
        parsed = avro.schema.parse(data)
    except (avro.errors.AvroException, ValueError, TypeError) as exc:
        raise SchemaRefused(
            f"Invalid schema definition data for {type_} schema: {exc}", incompatible=False
        ) from exc
    if isinstance(parsed, avro.schema.UnionSchema):
        raise SchemaRefused("Avro schema typed [UNION] is not supported", incompatible=False)
    return parsed


def _same(type_: str, parsed: avro.schema.Schema | None, data: str, other: str) -> bool:
    if parsed is None:
        return data == other
    return bool(_java_form(parsed.to_json()) == _java_form(avro.schema.parse(other).to_json()))


def _refusal(
    strategy: str,
    type_: str,
    parsed: avro.schema.Schema | None,
    history: list[tuple[int, _Entry]],
    data: str = "",
) -> str | None:
    """Why Pulsar refuses a schema not in the history (None: it takes it)."""
    if strategy == "ALWAYS_COMPATIBLE":
        return None
    transitive = strategy.endswith("_TRANSITIVE")
    compared = [e for _, e in history] if transitive else [history[-1][1]]
    for e in compared:
        if e.type != type_:
            return f"Incompatible schema: exists schema type {e.type}, new schema type {type_}"
    if type_ == "PROTOBUF_NATIVE" and strategy != "ALWAYS_INCOMPATIBLE":
        new = _root_of_native(data)
        for e in compared:
            if (old := _root_of_native(e.data)) != new:
                return (
                    f"Protobuf root message change is not allowed under the '{strategy}' "
                    f"strategy. Original message name: '{old}', new message name: '{new}'."
                )
        return None
    if type_ == "PROTOBUF_NATIVE":
        return "Unknown SchemaCompatibilityStrategy."
    if parsed is None or type_ not in AVRO_CHECKED:
        if strategy == "ALWAYS_INCOMPATIBLE":
            return "Schema compatibility strategy is ALWAYS_INCOMPATIBLE"
        return None
    why = check(strategy, parsed, [avro.schema.parse(e.data) for e in compared])
    return None if why is None else f"Error during schema compatibility check: {why}"


def _java_form(j: Any) -> Any:
    """An Avro schema's JSON as Java's Schema.equals compares it: without docs, aliases
    and an enum's default, with `order: ascending` (the default) left out."""
    if isinstance(j, list):
        return [_java_form(branch) for branch in j]
    if not isinstance(j, dict):
        return j
    kind = j.get("type")
    out = {k: v for k, v in j.items() if k not in ("doc", "aliases")}
    if kind == "enum":
        out.pop("default", None)
    elif kind in ("record", "error"):
        out["fields"] = [_field_form(f) for f in j.get("fields", [])]
    elif kind == "array":
        out["items"] = _java_form(j["items"])
    elif kind == "map":
        out["values"] = _java_form(j["values"])
    elif isinstance(kind, (dict, list)):
        out["type"] = _java_form(kind)
    return out


def _field_form(f: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in f.items() if k not in ("doc", "aliases")}
    if out.get("order") == "ascending":
        del out["order"]
    out["type"] = _java_form(f["type"])
    return out


def _root_of_native(data: str) -> str:
    """The root message's full name of PROTOBUF_NATIVE data, as Pulsar's
    ProtobufNativeSchemaUtils.deserialize finds it (422 when it cannot)."""
    try:
        native = json.loads(data)
        files = {
            f.name: f
            for f in descriptor_pb2.FileDescriptorSet.FromString(
                base64.b64decode(native["fileDescriptorSet"], validate=True)
            ).file
        }
        root_file, root = files[native["rootFileDescriptorName"]], native["rootMessageTypeName"]
        missing = [d for d in root_file.dependency if d not in files]
        local = root.removeprefix(root_file.package + ".") if root_file.package else root
        first, *nested = local.split(".")
        message = next(m for m in root_file.message_type if m.name == first)
        for name in nested:
            message = next(m for m in message.nested_type if m.name == name)
    except (ValueError, KeyError, TypeError, StopIteration, binascii.Error, DecodeError):
        missing = ["?"]
    if missing:
        raise SchemaRefused("deserialize ProtobufNative Schema failed", incompatible=False)
    return str(root)
