"""Admin HTTP: /healthz (process alive), /readyz (Pulsar reachable), /metrics,
/v1/topics, /v1/groups, /v1/groups/{group} and /v1/instances. Only the first two are
open to anyone; who may see the rest is kop.ops.admin_access's rule."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from kop.cluster.ownership import Ownership
from kop.groups.report import GroupReport
from kop.ops.admin_access import Grant, admin_access, bearer_of, read_token
from kop.ops.metrics import Metrics
from kop.ops.viewer import Unauthorized, Viewer
from kop.partitions.manager import LogManager
from kop.security.authorizer import Access

ReadyCheck = Callable[[], Awaitable[bool]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# the request's Access (set by AdminServer._guard); None: everything is shown
_ACCESS = web.RequestKey[Access | None]("access")


class AdminServer:
    def __init__(
        self,
        metrics: Metrics,
        logs: LogManager,
        ready: ReadyCheck,
        groups: GroupReport | None = None,
        ownership: Ownership | None = None,
        viewer: Viewer | None = None,
        admin_token: str = "",
    ) -> None:
        """`viewer`: None without authorization. `admin_token`: the token that may see
        everything (itself or file:///path; "" none); AdminTokenError if unreadable."""
        self._viewer = viewer
        self._admin_token = read_token(admin_token)
        self._metrics = metrics
        self._ownership = ownership
        self._groups = groups
        self._logs = logs
        self._ready = ready
        self._runner: web.AppRunner | None = None
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics_page)
        app.router.add_get("/v1/topics", self._topics)
        app.router.add_get("/v1/groups", self._group_list)
        app.router.add_get("/v1/groups/{group}", self._group)
        app.router.add_get("/v1/instances", self._instances)
        self._app = app

    async def start(self, host: str, port: int) -> None:
        self._runner = web.AppRunner(self._app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _readyz(self, _request: web.Request) -> web.Response:
        if await self._ready():
            return web.json_response({"status": "ready"})
        return web.json_response({"status": "pulsar unreachable"}, status=503)

    async def _metrics_page(self, _request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self._metrics.registry),
            headers={"Content-Type": CONTENT_TYPE_LATEST},
        )

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """admin_access's rule, before any handler (an unknown path included)."""
        decision = admin_access(
            request.path,
            _peer_ip(request),
            bearer_of(request.headers.get("Authorization", "")),
            admin_token=self._admin_token,
            authorizing=self._viewer is not None,
        )
        if decision.grant is Grant.DENIED:
            return _unauthorized(decision.reason)
        access: Access | None = None
        if decision.grant is not Grant.EVERYTHING:
            assert self._viewer is not None  # a JWT decides only with authorization on
            try:
                access = self._viewer.access(request)
            except Unauthorized as exc:
                return _unauthorized(str(exc))
            if decision.grant is Grant.SUPERUSER:
                if not await access.cluster():
                    return web.json_response(
                        {"error": "only a superuser or the admin token may see this: it "
                                  "shows every tenant"}, status=403,
                    )  # fmt: skip
                access = None
        request[_ACCESS] = access
        return await handler(request)

    @staticmethod
    def _access(request: web.Request) -> Access | None:
        return request[_ACCESS]

    async def _topics(self, request: web.Request) -> web.Response:
        access = self._access(request)
        shown = {
            t: plog for t, plog in self._logs.owned().items()
            if access is None or await self._viewer.may_see_partition(access, t)  # type: ignore[union-attr]
        }  # fmt: skip
        owned = {
            topic: {
                "log_start_offset": plog.log_start,
                "high_watermark": plog.high_watermark,
                # Where Pulsar's live ledgers begin (below it: a compacted topic's
                # survivors, or nothing); above the log start once retention deleted.
                "data_start_offset": plog.index.data_start,
                # A compacted partition: offsets below this are noted and pinned by a
                # compaction cycle, so retention may delete the live ledgers below.
                "compaction_noted_offset": (
                    plog.compacted.noted_offset if plog.compacted else None
                ),
                "checkpoints": len(plog.index.checkpoints),
                "resumed_from_offset": plog.follower.resumed_from,
                "persisted_offset": plog.persisted_offset,
                "malformed_messages": plog.stats.malformed,
                "trims": plog.stats.trims,
                "index_write_failures": plog.stats.index_write_failures,
                "last_error": plog.last_error,
            }
            for topic, plog in sorted(shown.items())
        }
        return web.json_response({"partitions": owned})

    async def _instances(self, _request: web.Request) -> web.Response:
        """The live kop instances as this one sees them, and which one it is."""
        if self._ownership is None:
            return web.json_response({"error": "no membership"}, status=404)
        me = self._ownership.me
        live = [
            {"node_id": m.node_id, "host": m.host, "port": m.port, "instance": m.instance,
             "this": m.instance == me.instance}
            for m in self._ownership.brokers()
        ]  # fmt: skip
        return web.json_response({"node_id": me.node_id, "instances": live})

    async def _group_list(self, request: web.Request) -> web.Response:
        access = self._access(request)
        if self._groups is None:
            return web.json_response({"error": "groups are not served"}, status=404)
        if not self._groups.groups.loaded:
            return web.json_response({"error": "groups are loading"}, status=503)
        listed = self._groups.list()
        if access is not None:
            assert self._viewer is not None
            listed = [g for g in listed if await self._viewer.may_see_group(access, g["group"])]
        return web.json_response({"groups": listed})

    async def _group(self, request: web.Request) -> web.Response:
        access = self._access(request)
        if self._groups is None:
            return web.json_response({"error": "groups are not served"}, status=404)
        if not self._groups.groups.loaded:
            return web.json_response({"error": "groups are loading"}, status=503)
        group = request.match_info["group"]
        hidden = access is not None and not await self._viewer.may_see_group(access, group)  # type: ignore[union-attr]
        found = None if hidden else await self._groups.describe(group)
        if found is None:  # one not to be seen is answered as one that does not exist
            return web.json_response({"error": f"no group {group!r}"}, status=404)
        return web.json_response(found)


def _peer_ip(request: web.Request) -> str | None:
    """The TCP peer's address (never a header a proxy or the client may set)."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    return str(peer[0]) if isinstance(peer, tuple) and peer else None


def _unauthorized(reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=401, headers={"WWW-Authenticate": "Bearer"})
