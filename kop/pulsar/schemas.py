"""Pulsar's schema registry through its admin REST (v2): the storage port's
`TopicSchemas`, so the Schema Registry and Pulsar's typed producers share one
history and one compatibility strategy per topic.

What Pulsar 4.0 answers, as observed (tests/integration/test_pulsar_schemas.py):
- `schemas/{t}/{ns}/{topic}/...` names the topic without `persistent/`; a partitioned
  topic's history is its own name's (each partition shows the same one), and a topic
  need not exist for its schema to be uploaded (its namespace must: else 404);
- POST `.../schema` answers `{"version":{"version":N}}`; 409 when the strategy refuses
  (or the type differs), 422 when the data is no schema of its type, 500 for a type
  name Pulsar does not know;
- DELETE `.../schema` writes a tombstone that takes a version number, even when
  there is nothing to delete;
- a topic's policy (GET/PUT/DELETE `persistent/.../schemaCompatibilityStrategy`) needs
  the topic to exist (404), answers an empty body when unset, and may not be set on a
  partition (412); a namespace's (GET/PUT; no DELETE) reads "UNDEFINED" when unset;
  both take an unknown name as "unset" without an error, so names are checked here.
"""

from __future__ import annotations

import html
import re
from typing import Any

from kop.pulsar.permissions import Request
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.schemas import STRATEGIES, PulsarSchema, SchemaRefused
from kop.storage.types import AdminError

# Pulsar's broker default (`schemaCompatibilityStrategy` in broker.conf), the one kop
# assumes when it may not read the broker's configuration (a superuser's call).
BROKER_DEFAULT = "FULL"
_UNSET = "UNDEFINED"
_MAX_REASON = 1000


class PulsarTopicSchemas:
    def __init__(self, request: Request) -> None:
        self._request = request

    async def history(self, topic: PulsarTopic) -> list[PulsarSchema]:
        found = await self._request("GET", f"{_schemas(topic)}/schemas", ok_missing=True)
        if not isinstance(found, dict):
            return []
        return [_schema(one) for one in found.get("getSchemaResponses") or []]

    async def upload(self, topic: PulsarTopic, type_: str, data: str) -> int:
        payload = {"type": type_, "schema": data, "properties": {}}
        try:
            answer = await self._request("POST", f"{_schemas(topic)}/schema", payload)
        except AdminError as exc:
            if exc.status == 409:
                raise SchemaRefused(_one_line(exc.reason), incompatible=True) from exc
            if exc.status in (400, 422):
                raise SchemaRefused(_one_line(exc.reason), incompatible=False) from exc
            raise
        return _version(answer)

    async def delete(self, topic: PulsarTopic) -> None:
        # A missing namespace has nothing to delete.
        await self._request("DELETE", f"{_schemas(topic)}/schema", ok_missing=True)

    async def topic_strategy(self, topic: PulsarTopic) -> str | None:
        """None also for a topic that does not exist: it has no policy."""
        found = await self._request("GET", _topic_policy(topic), ok_missing=True)
        return _strategy(found)

    async def set_topic_strategy(self, topic: PulsarTopic, strategy: str | None) -> None:
        if strategy is None:
            await self._request("DELETE", _topic_policy(topic))
        else:
            await self._request("PUT", _topic_policy(topic), _known(strategy))

    async def namespace_strategy(self, ns: Namespace) -> str | None:
        found = await self._request("GET", _namespace_policy(ns), ok_missing=True)
        return _strategy(found)

    async def set_namespace_strategy(self, ns: Namespace, strategy: str | None) -> None:
        # Pulsar has no DELETE for it: unset is the value UNDEFINED.
        wanted = _UNSET if strategy is None else _known(strategy)
        await self._request("PUT", _namespace_policy(ns), wanted)

    async def broker_strategy(self) -> str:
        """The broker's configured strategy; Pulsar's default when kop's role (a tenant
        admin, not a superuser) may not read the broker's configuration."""
        try:
            config = await self._request("GET", "brokers/configuration/runtime")
        except AdminError as exc:
            if exc.status not in (401, 403):
                raise
            return BROKER_DEFAULT
        found = config.get("schemaCompatibilityStrategy") if isinstance(config, dict) else None
        return _strategy(found) or BROKER_DEFAULT


def _schemas(topic: PulsarTopic) -> str:
    return f"schemas/{topic.namespace.path}/{topic.local}"


def _topic_policy(topic: PulsarTopic) -> str:
    return f"{topic.rest_path}/schemaCompatibilityStrategy"


def _namespace_policy(ns: Namespace) -> str:
    return f"namespaces/{ns.path}/schemaCompatibilityStrategy"


def _known(strategy: str) -> str:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown compatibility strategy {strategy!r}")
    return strategy


def _strategy(found: Any) -> str | None:
    """A policy as read: None when unset (an empty body, UNDEFINED)."""
    return found if isinstance(found, str) and found in STRATEGIES else None


def _schema(one: dict[str, Any]) -> PulsarSchema:
    return PulsarSchema(
        version=int(one["version"]),
        type=str(one.get("type", "")),
        data=str(one.get("data", "")),
        timestamp_ms=int(one.get("timestamp") or 0),
        properties={str(k): str(v) for k, v in (one.get("properties") or {}).items()},
    )


def _version(answer: Any) -> int:
    """POST's `{"version":{"version":N}}` (a LongSchemaVersion bean); a bare number as
    other versions' `{"version":N}` is taken too."""
    version = answer.get("version") if isinstance(answer, dict) else None
    if isinstance(version, dict):
        version = version.get("version")
    if not isinstance(version, int):
        raise AdminError(500, f"schema upload answered without a version: {answer!r}")
    return version


def _one_line(reason: str) -> str:
    """Pulsar's refusal as one line: its Jetty page's title is HTML-escaped, starts with
    `Error 409 ` and holds both schemas pretty-printed."""
    text = re.sub(r"\s+", " ", html.unescape(reason)).strip()
    text = re.sub(r"^Error \d{3} ", "", text)
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."
