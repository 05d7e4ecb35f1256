"""The Schema Registry's REST API, as Confluent's clients and tools speak it: its paths,
its JSON (`application/vnd.schemaregistry.v1+json`), its statuses and error codes.
The operations are kop.registry.service's; this module reads requests and writes
answers, and turns every refusal into Confluent's `{"error_code", "message"}`."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from kop.registry import errors, subjects
from kop.registry.errors import RegistryError
from kop.registry.references import Resolve
from kop.registry.schemas import AVRO, SERVED_TYPES, Schema, parse, shown
from kop.registry.strategies import CONFLUENT_TO_PULSAR
from kop.storage.types import AdminError, StorageError

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
APICURIO_PREFIX = "/apis/registry/v2"  # Apicurio's face (kop/registry/apicurio.py)
MAX_BODY_BYTES = 2 << 20  # a schema (kop.registry.schemas.MAX_SCHEMA_BYTES) and its JSON
_MAX_VERSION = 2**31 - 1
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def answer(body: object, status: int = 200) -> web.Response:
    return web.Response(status=status, text=json.dumps(body), content_type=CONTENT_TYPE)


def flag(request: web.Request, name: str) -> bool:
    """A boolean query parameter; confluent-kafka sends Python's `True`/`False`."""
    return request.query.get(name, "false").strip().lower() == "true"


def version_of(text: str) -> int:
    """`latest`, -1 or 1..2^31-1 (42202 otherwise), as Confluent's VersionId reads it."""
    text = text.strip()
    if text.lower() == "latest":
        return subjects.LATEST
    try:
        number = int(text)
    except ValueError:
        raise errors.invalid_version(text) from None
    if number == -1:
        return subjects.LATEST
    if not 1 <= number <= _MAX_VERSION:
        raise errors.invalid_version(text)
    return number


def level_of(body: Any) -> str:
    level = body.get("compatibility") if isinstance(body, dict) else None
    if not isinstance(level, str) or level.upper() not in CONFLUENT_TO_PULSAR:
        raise errors.invalid_level(level)
    return level.upper()


def schema_body(
    subject: str | None, version: int | None, schema_id: int, s: Schema, fmt: str | None = None
) -> dict[str, Any]:
    """A schema as Confluent answers it (`schemaType` only when it is not AVRO; `fmt`:
    the request's `format`, see `schemas.shown`)."""
    out: dict[str, Any] = {}
    if subject is not None:
        out["subject"] = subject
    if version is not None:
        out["version"] = version
    out["id"] = schema_id
    if s.type != AVRO:
        out["schemaType"] = s.type
    if s.references:
        out["references"] = [r.to_json() for r in s.references]
    out["schema"] = shown(s, fmt)
    return out


@web.middleware
async def refusals(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every refusal as Confluent's JSON: the registry's, aiohttp's own (no such path,
    method, too large a body) and the storage's (50001); under Apicurio's paths with the
    `name` its Java clients read too."""
    try:
        return await handler(request)
    except RegistryError as exc:
        return _refused(request, exc.body(), exc.http)
    except web.HTTPException as exc:
        if exc.status >= 400:
            return _refused(request, {"error_code": exc.status, "message": exc.reason}, exc.status)
        raise
    except (StorageError, AdminError, TimeoutError) as exc:
        log.warning("schema registry %s %s: %s", request.method, request.path, exc)
        return _refused(request, errors.store_error(str(exc) or "timed out").body(), 500)


def _refused(request: web.Request, body: dict[str, object], status: int) -> web.Response:
    if request.path.startswith(APICURIO_PREFIX):
        body = {**body, "error_code": status, "name": "RegistryException"}
    return answer(body, status)


async def json_body(request: web.Request) -> Any:
    try:
        return await request.json(loads=json.loads)
    except (ValueError, UnicodeDecodeError):
        raise RegistryError(400, 400, "the request body is not JSON") from None


async def schema_of_body(body: Any, resolve: Resolve, owner: str) -> Schema:
    """The schema a request's body holds; `owner`, the asking namespace (its compiles of
    `.proto` text are bounded, kop.registry.protobuf.compiler)."""
    if not isinstance(body, dict):
        raise errors.invalid_schema("the body must be a JSON object")
    schema, kind, refs = body.get("schema"), body.get("schemaType"), body.get("references")
    return await parse(schema, kind, refs, resolve, owner)


SCHEMA_TYPES = list(SERVED_TYPES)
