"""The registry's paths, each handler reading its asker, calling the registry and
answering as Confluent's registry does."""

from __future__ import annotations

import functools
from typing import Any

from aiohttp import web

from kop.registry import errors, subjects
from kop.registry.access import Asker, authorize, checked_subject
from kop.registry.apicurio import add_apicurio_routes
from kop.registry.askers import Askers
from kop.registry.references import Resolve
from kop.registry.rest import (
    MAX_BODY_BYTES,
    SCHEMA_TYPES,
    answer,
    flag,
    json_body,
    level_of,
    refusals,
    schema_body,
    schema_of_body,
    version_of,
)
from kop.registry.schemas import Schema, shown
from kop.registry.service import Registry
from kop.security.authorizer import TopicOp

_MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT", "FORWARD")


def registry_app(registry: Registry, askers: Askers) -> web.Application:
    app = web.Application(middlewares=[refusals], client_max_size=MAX_BODY_BYTES)
    h = Handlers(registry, askers)
    r = app.router
    r.add_get("/", h.root)
    r.add_get("/subjects", h.list_subjects)
    r.add_get("/subjects/{subject}/versions", h.list_versions)
    r.add_post("/subjects/{subject}/versions", h.register)
    r.add_get("/subjects/{subject}/versions/{version}", h.get_version)
    r.add_get("/subjects/{subject}/versions/{version}/schema", h.get_version_schema)
    r.add_get("/subjects/{subject}/versions/{version}/referencedby", h.referenced_by)
    r.add_delete("/subjects/{subject}/versions/{version}", h.delete_version)
    r.add_post("/subjects/{subject}", h.lookup)
    r.add_delete("/subjects/{subject}", h.delete_subject)
    r.add_get("/schemas/types", h.types)
    r.add_get("/schemas/ids/{id}", h.by_id)
    r.add_get("/schemas/ids/{id}/schema", h.by_id_schema)
    r.add_get("/schemas/ids/{id}/subjects", h.id_subjects)
    r.add_get("/schemas/ids/{id}/versions", h.id_versions)
    r.add_post("/compatibility/subjects/{subject}/versions/{version}", h.compatible)
    r.add_post("/compatibility/subjects/{subject}/versions", h.compatible)
    r.add_get("/config", h.get_global)
    r.add_put("/config", h.put_global)
    r.add_delete("/config", h.delete_global)
    r.add_get("/config/{subject}", h.get_config)
    r.add_put("/config/{subject}", h.put_config)
    r.add_delete("/config/{subject}", h.delete_config)
    r.add_get("/mode", h.get_mode)
    r.add_put("/mode", h.put_mode)
    r.add_get("/mode/{subject}", h.get_mode)
    r.add_put("/mode/{subject}", h.put_mode)
    add_apicurio_routes(app, registry, askers)  # Apicurio's Java serdes (Maven Central's)
    return app


def _subject(request: web.Request) -> str:
    return checked_subject(request.match_info["subject"])


def _id(request: web.Request) -> int:
    try:
        return int(request.match_info["id"])
    except ValueError:
        raise errors.schema_not_found() from None


class Handlers:
    def __init__(self, registry: Registry, askers: Askers) -> None:
        self.r = registry
        self.askers = askers

    def _who(self, request: web.Request) -> Asker:
        return self.askers.asker(request)

    async def _schema(self, request: web.Request) -> Schema:
        """The schema a request's body holds, its references resolved as the asker."""
        who = self._who(request)
        resolve: Resolve = functools.partial(self.r.resolved, who)
        return await schema_of_body(await json_body(request), resolve, who.ns)

    async def root(self, request: web.Request) -> web.Response:
        return answer({})

    async def list_subjects(self, request: web.Request) -> web.Response:
        state = await self.r.namespace(self._who(request))
        deleted, only = flag(request, "deleted"), flag(request, "deletedOnly")
        prefix = request.query.get("subjectPrefix", "")
        found = []
        for name in sorted(state.subjects):
            live = subjects.versions(state, name)
            every = subjects.versions(state, name, deleted=True)
            shown = (not live and bool(every)) if only else bool(live) or (deleted and bool(every))
            if shown and name.startswith(prefix):
                found.append(name)
        return answer(found)

    async def list_versions(self, request: web.Request) -> web.Response:
        subject = _subject(request)
        state = await self.r.view(self._who(request), subject)
        found = subjects.versions(state, subject, flag(request, "deleted"))
        if not found:
            raise errors.subject_not_found(subject)
        return answer(found)

    async def _version(self, request: web.Request) -> dict[str, Any]:
        subject = _subject(request)
        wanted = version_of(request.match_info["version"])
        state = await self.r.view(self._who(request), subject)
        number = subjects.version(state, subject, wanted, flag(request, "deleted"))
        schema_id, schema = subjects.schema_of(state, subject, number)
        return schema_body(subject, number, schema_id, schema, request.query.get("format"))

    async def get_version(self, request: web.Request) -> web.Response:
        return answer(await self._version(request))

    async def referenced_by(self, request: web.Request) -> web.Response:
        subject = _subject(request)
        wanted = version_of(request.match_info["version"])
        state = await self.r.view(self._who(request), subject)
        number = subjects.version(state, subject, wanted)
        return answer(subjects.referenced_by(state, subject, number))

    async def get_version_schema(self, request: web.Request) -> web.Response:
        return web.Response(text=(await self._version(request))["schema"])

    async def register(self, request: web.Request) -> web.Response:
        subject = _subject(request)
        schema = await self._schema(request)
        return answer({"id": await self.r.register(self._who(request), subject, schema)})

    async def lookup(self, request: web.Request) -> web.Response:
        subject = _subject(request)
        schema = await self._schema(request)
        state = await self.r.view(self._who(request), subject)
        deleted = flag(request, "deleted")
        if not subjects.versions(state, subject, deleted):
            raise errors.subject_not_found(subject)
        number = subjects.find(state, subject, schema, deleted)
        if number is None:
            raise errors.schema_not_found()
        schema_id, stored = subjects.schema_of(state, subject, number)
        return answer(schema_body(subject, number, schema_id, stored, request.query.get("format")))

    async def delete_subject(self, request: web.Request) -> web.Response:
        subject = _subject(request)
        who = self._who(request)
        return answer(await self.r.delete_subject(who, subject, flag(request, "permanent")))

    async def delete_version(self, request: web.Request) -> web.Response:
        subject = _subject(request)
        wanted = version_of(request.match_info["version"])
        permanent = flag(request, "permanent")
        return answer(await self.r.delete_version(self._who(request), subject, wanted, permanent))

    async def types(self, request: web.Request) -> web.Response:
        return answer(SCHEMA_TYPES)

    async def by_id(self, request: web.Request) -> web.Response:
        schema = await self.r.schema_by_id(self._who(request), _id(request))
        body = schema_body(None, None, 0, schema, request.query.get("format"))
        del body["id"]
        return answer(body)

    async def by_id_schema(self, request: web.Request) -> web.Response:
        schema = await self.r.schema_by_id(self._who(request), _id(request))
        return web.Response(text=shown(schema, request.query.get("format")))

    async def _uses(self, request: web.Request) -> list[tuple[str, int]]:
        who, schema_id = self._who(request), _id(request)
        await self.r.schema_by_id(who, schema_id)  # 40403, and the state read afresh
        state = await self.r.namespace(who)
        deleted = flag(request, "deleted")
        return [
            (name, n)
            for name in sorted(state.subjects)
            for n in subjects.versions(state, name, deleted)
            if state.subjects[name][n].id == schema_id
        ]

    async def id_subjects(self, request: web.Request) -> web.Response:
        return answer(sorted({name for name, _ in await self._uses(request)}))

    async def id_versions(self, request: web.Request) -> web.Response:
        uses = await self._uses(request)
        return answer([{"subject": name, "version": n} for name, n in uses])

    async def compatible(self, request: web.Request) -> web.Response:
        subject = _subject(request)
        who = self._who(request)
        given = request.match_info.get("version")
        wanted = None if given is None else version_of(given)
        schema = await self._schema(request)
        why = await self.r.why_incompatible(who, subject, schema, wanted)
        body: dict[str, Any] = {"is_compatible": why is None}
        if flag(request, "verbose"):
            body["messages"] = [] if why is None else [why]
        return answer(body)

    async def get_global(self, request: web.Request) -> web.Response:
        return answer({"compatibilityLevel": await self.r.levels.global_level(self._who(request))})

    async def put_global(self, request: web.Request) -> web.Response:
        level = level_of(await json_body(request))
        await self.r.levels.set_global_level(self._who(request), level)
        return answer({"compatibility": level})

    async def delete_global(self, request: web.Request) -> web.Response:
        who = self._who(request)
        before = await self.r.levels.global_level(who)
        await self.r.levels.set_global_level(who, None)
        return answer({"compatibilityLevel": before})

    async def get_config(self, request: web.Request) -> web.Response:
        subject = _subject(request)
        who = self._who(request)
        await authorize(who, subject, TopicOp.DESCRIBE)
        level = await self.r.levels.subject_level(who, subject)
        if level is None:
            if not flag(request, "defaultToGlobal"):
                raise errors.no_subject_config(subject)
            level = await self.r.levels.global_level(who)
        return answer({"compatibilityLevel": level})

    async def put_config(self, request: web.Request) -> web.Response:
        subject = _subject(request)
        level = level_of(await json_body(request))
        await self.r.levels.set_subject_level(self._who(request), subject, level)
        return answer({"compatibility": level})

    async def delete_config(self, request: web.Request) -> web.Response:
        subject = _subject(request)
        who = self._who(request)
        before = await self.r.levels.subject_level(who, subject)
        if before is None:
            raise errors.subject_not_found(subject)
        await self.r.levels.set_subject_level(who, subject, None)
        return answer({"compatibilityLevel": before})

    async def get_mode(self, request: web.Request) -> web.Response:
        self._who(request)
        return answer({"mode": "READWRITE"})

    async def put_mode(self, request: web.Request) -> web.Response:
        """kop's registry is always READWRITE: its ids are kop's to hand out (no IMPORT)."""
        self._who(request)
        body = await json_body(request)
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in _MODES:
            raise errors.invalid_mode()
        if mode.upper() != "READWRITE":
            raise errors.not_permitted(f"kop's registry serves READWRITE only, not {mode}")
        return answer({"mode": "READWRITE"})
