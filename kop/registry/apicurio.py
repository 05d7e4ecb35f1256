"""The part of Apicurio Registry's v2 REST API that Apicurio's Java serializers, and
Kafka Connect's converters built on them, speak: the Java serdes on Maven Central
(Confluent's are not there) can then use kop's registry, with nothing to change but
their URL (docs/schema-registry.md says which options).

It is a second face of the same registry, not another store: an artifact of the group
`default` is a subject, and a schema's Apicurio `globalId` and `contentId` are both its
Confluent id, so a record a Java producer framed (`apicurio.registry.as-confluent`) is
read by Confluent's deserializers and converted for Pulsar like any other. Refusals are
answered as Apicurio's, whose `name` picks the exception a Java client throws.

The calls, as Apicurio's serdes 2.6 make them (their own tests: tests/integration/
test_registry_java.py): register (`POST /groups/{g}/artifacts`, `ifExists`), look up
by content (`POST .../artifacts/{a}/meta`), latest and one version's metadata, and a
schema (and its references: none) by id.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from kop.registry import errors, subjects
from kop.registry.access import Asker, checked_subject
from kop.registry.askers import Askers
from kop.registry.errors import RegistryError
from kop.registry.rest import APICURIO_PREFIX as PREFIX
from kop.registry.rest import version_of
from kop.registry.schemas import AVRO, SERVED_TYPES, Schema, parse, shown
from kop.registry.service import Registry
from kop.registry.state import NamespaceState

GROUP = "default"  # the group serdes use unless told otherwise; kop keeps no other
_IF_EXISTS = ("FAIL", "UPDATE", "RETURN", "RETURN_OR_UPDATE")
# Confluent's error codes as the Apicurio exception a Java client throws for each
_NAMES = {
    40101: "NotAuthorizedException", 40301: "ForbiddenException",
    40401: "ArtifactNotFoundException", 40402: "VersionNotFoundException",
    40403: "ContentNotFoundException", 409: "RuleViolationException",
    42201: "InvalidArtifactException", 42202: "VersionNotFoundException",
    42205: "LimitExceededException", 42208: "InvalidArtifactIdException",
    42209: "LimitExceededException", 50001: "RegistryStorageException",
}  # fmt: skip

ApiHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def add_apicurio_routes(app: web.Application, registry: Registry, askers: Askers) -> None:
    h = ApicurioHandlers(registry, askers)
    groups = f"{PREFIX}/groups/{{group}}/artifacts"
    r = app.router
    r.add_post(groups, _answered(h.create))
    r.add_post(f"{groups}/{{artifact}}/meta", _answered(h.by_content))
    r.add_get(f"{groups}/{{artifact}}/meta", _answered(h.latest_meta))
    r.add_get(f"{groups}/{{artifact}}", _answered(h.latest_content))
    r.add_get(f"{groups}/{{artifact}}/versions/{{version}}/meta", _answered(h.version_meta))
    r.add_get(f"{groups}/{{artifact}}/versions/{{version}}", _answered(h.version_content))
    for kind in ("globalIds", "contentIds"):
        r.add_get(f"{PREFIX}/ids/{kind}/{{id}}", _answered(h.content_by_id))
        r.add_get(f"{PREFIX}/ids/{kind}/{{id}}/references", _answered(h.references))


def _answered(handler: ApiHandler) -> ApiHandler:
    """Refusals as Apicurio's error JSON (the Confluent API's middleware answers the
    other paths)."""

    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except RegistryError as exc:
            name = _NAMES.get(exc.code, "RegistryException")
            body = {"error_code": exc.http, "message": exc.message, "name": name,
                    "detail": f"{name}: {exc.message}"}  # fmt: skip
            return web.json_response(body, status=exc.http)

    return wrapped


def _artifact(request: web.Request, name: str | None = None) -> str:
    group = request.match_info["group"]
    if group != GROUP:
        raise RegistryError(404, 40401, f"kop's registry has one group, {GROUP!r}, not {group!r}")
    return checked_subject(name if name is not None else request.match_info["artifact"])


async def _schema(text: str, artifact_type: str | None, who: Asker) -> Schema:
    kind = (artifact_type or AVRO).upper()
    if kind not in SERVED_TYPES:
        raise errors.invalid_schema(f"artifact type {kind!r} is not served by kop")
    return await parse(text, kind, owner=who.ns)


def _meta(state: NamespaceState, subject: str, number: int) -> dict[str, Any]:
    schema_id, schema = subjects.schema_of(state, subject, number)
    return {
        "groupId": GROUP, "id": subject, "version": str(number), "type": schema.type,
        "globalId": schema_id, "contentId": schema_id, "state": "ENABLED",
    }  # fmt: skip


class ApicurioHandlers:
    def __init__(self, registry: Registry, askers: Askers) -> None:
        self.r = registry
        self.askers = askers

    async def create(self, request: web.Request) -> web.Response:
        """Register (`ifExists`: RETURN_OR_UPDATE, the serdes' choice, and UPDATE add a
        version unless the schema is one; RETURN answers the latest; FAIL refuses an
        artifact that exists)."""
        who = self.askers.asker(request)
        subject = _artifact(request, request.headers.get("X-Registry-ArtifactId", ""))
        if_exists = request.query.get("ifExists", "FAIL").upper()
        if if_exists not in _IF_EXISTS:
            raise RegistryError(400, 400, f"ifExists {if_exists!r} is not one of {_IF_EXISTS}")
        kind = request.headers.get("X-Registry-ArtifactType")
        schema = await _schema(await request.text(), kind, who)
        if if_exists in ("FAIL", "RETURN"):
            state = await self.r.view(who, subject)
            live = subjects.versions(state, subject)
            if live and if_exists == "RETURN":
                return web.json_response(_meta(state, subject, live[-1]))
            if live:
                raise RegistryError(409, 40901, f"artifact {subject!r} already exists")
        await self.r.register(who, subject, schema)
        state = await self.r.view(who, subject)
        number = subjects.find(state, subject, schema)
        if number is None:  # deleted between the two calls
            raise errors.subject_not_found(subject)
        return web.json_response(_meta(state, subject, number))

    async def by_content(self, request: web.Request) -> web.Response:
        who = self.askers.asker(request)
        subject = _artifact(request)
        kind = request.headers.get("X-Registry-ArtifactType")
        schema = await _schema(await request.text(), kind, who)
        state = await self.r.view(who, subject)
        number = subjects.find(state, subject, schema)
        if number is None:
            if not subjects.versions(state, subject):
                raise errors.subject_not_found(subject)
            raise errors.schema_not_found()
        return web.json_response(_meta(state, subject, number))

    async def _version(self, request: web.Request, wanted: int) -> dict[str, Any]:
        subject = _artifact(request)
        state = await self.r.view(self.askers.asker(request), subject)
        return _meta(state, subject, subjects.version(state, subject, wanted))

    async def latest_meta(self, request: web.Request) -> web.Response:
        return web.json_response(await self._version(request, subjects.LATEST))

    async def version_meta(self, request: web.Request) -> web.Response:
        wanted = version_of(request.match_info["version"])
        return web.json_response(await self._version(request, wanted))

    async def _content(self, request: web.Request, wanted: int) -> web.Response:
        meta = await self._version(request, wanted)
        return await self._raw(request, meta["globalId"])

    async def latest_content(self, request: web.Request) -> web.Response:
        return await self._content(request, subjects.LATEST)

    async def version_content(self, request: web.Request) -> web.Response:
        return await self._content(request, version_of(request.match_info["version"]))

    async def content_by_id(self, request: web.Request) -> web.Response:
        return await self._raw(request, _id(request))

    async def _raw(self, request: web.Request, schema_id: int) -> web.Response:
        schema = await self.r.schema_by_id(self.askers.asker(request), schema_id)
        return web.Response(text=shown(schema), content_type="application/json")

    async def references(self, request: web.Request) -> web.Response:
        """No schema kop serves has references (they are refused on registering)."""
        await self.r.schema_by_id(self.askers.asker(request), _id(request))
        return web.Response(text=json.dumps([]), content_type="application/json")


def _id(request: web.Request) -> int:
    try:
        return int(request.match_info["id"])
    except ValueError:
        raise errors.schema_not_found() from None
