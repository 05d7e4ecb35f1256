"""Who may see what of the admin HTTP (issue 33, finding 1): /healthz and /readyz to
anyone; the rest with the admin token, a bearer JWT when kop authorizes (a
superuser's for /metrics and /v1/instances), or from loopback when kop has neither.
The rule (kop.ops.admin_access) as a pure function, then over the real app of an
in-memory gateway on loopback with and without an admin token. The same rule with
authorization on and real JWTs: tests/gateway/test_authorization.py."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from click.testing import CliRunner
from multidict import CIMultiDict

from kop.cli.groups import groups
from kop.ops.admin_access import (
    AdminTokenError,
    Decision,
    Grant,
    admin_access,
    bearer_of,
    is_loopback,
    read_token,
)
from tests.gateway.memory_gateway import free_port, gateway_with_hot_topic

TOKEN = "admin-token-3f9c1e7a5b2d4c6e8f0a"
GUARDED = ["/metrics", "/v1/instances", "/v1/groups", "/v1/groups/g", "/v1/topics", "/nowhere"]
LOOPBACK = ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"]
ELSEWHERE = ["192.0.2.7", "10.0.0.1", "::ffff:10.0.0.1", "2001:db8::1", "", None, "localhost"]


def decide(
    path: str, peer: str | None, bearer: str | None = None, *, token: str = "", auth: bool = False
) -> Decision:
    return admin_access(path, peer, bearer, admin_token=token, authorizing=auth)


@pytest.mark.parametrize("auth", [False, True])
@pytest.mark.parametrize("token", ["", TOKEN])
@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_are_open_to_anyone(path: str, token: str, auth: bool) -> None:
    for peer in [*LOOPBACK, *ELSEWHERE]:
        assert decide(path, peer, None, token=token, auth=auth).grant is Grant.EVERYTHING


@pytest.mark.parametrize("path", GUARDED)
def test_without_authorization_or_token_only_loopback_sees_the_rest(path: str) -> None:
    for peer in LOOPBACK:
        assert is_loopback(peer)
        assert decide(path, peer).grant is Grant.EVERYTHING
    for peer in ELSEWHERE:
        assert not is_loopback(peer)
        for bearer in (None, "whatever", TOKEN):  # no token configured: none is taken
            refused = decide(path, peer, bearer)
            assert refused.grant is Grant.DENIED, (peer, bearer)
            assert "set admin_token" in refused.reason and "\n" not in refused.reason


@pytest.mark.parametrize("path", GUARDED)
def test_an_admin_token_is_needed_from_everywhere_once_set(path: str) -> None:
    for peer in [*LOOPBACK, *ELSEWHERE]:
        assert decide(path, peer, TOKEN, token=TOKEN).grant is Grant.EVERYTHING
        for bearer in (None, "", "wrong", TOKEN[:-1], TOKEN + "x", TOKEN.upper()):
            refused = decide(path, peer, bearer, token=TOKEN)
            assert refused.grant is Grant.DENIED, (peer, bearer)
            assert "admin token" in refused.reason


@pytest.mark.parametrize("token", ["", TOKEN])
def test_with_authorization_a_jwt_decides_and_no_bearer_is_refused(token: str) -> None:
    for peer in [*LOOPBACK, *ELSEWHERE]:
        for path in GUARDED:
            assert decide(path, peer, None, token=token, auth=True).grant is Grant.DENIED
        # role-filtered views; everything else (every tenant's) for superusers only
        for path in ["/v1/groups", "/v1/groups/%2F%2Facme%2Forders%2Fg", "/v1/topics"]:
            assert decide(path, peer, "a.jwt", token=token, auth=True).grant is Grant.ROLE_VIEW
        for path in ["/metrics", "/v1/instances", "/v1/groupsx", "/v1/topicsx", "/nowhere"]:
            assert decide(path, peer, "a.jwt", token=token, auth=True).grant is Grant.SUPERUSER
        admin = decide("/metrics", peer, TOKEN, token=token, auth=True).grant
        assert admin is (Grant.EVERYTHING if token else Grant.SUPERUSER)


def test_bearer_and_token_notation(tmp_path: Path) -> None:
    assert bearer_of(f"Bearer {TOKEN}") == bearer_of(f"bearer  {TOKEN} ") == TOKEN
    for header in ("", "Bearer", "Bearer ", f"Basic {TOKEN}", TOKEN):
        assert bearer_of(header) is None
    assert read_token("") == ""
    assert read_token(TOKEN) == TOKEN
    (tmp_path / "token").write_text(TOKEN + "\n")
    assert read_token(f"file://{tmp_path}/token") == TOKEN
    with pytest.raises(AdminTokenError, match="admin_token: cannot read"):
        read_token(f"file://{tmp_path}/missing")


def fetch(port: int, path: str, token: str | None = None) -> tuple[int, Any, Any]:
    """(status, headers, body: JSON when it is) of GET `path` from 127.0.0.1."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, got, body = resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        status, got, body = exc.code, exc.headers, exc.read()
    is_json = got.get_content_type() == "application/json"
    return status, got, json.loads(body) if is_json else body.decode()


async def get(port: int, path: str, token: str | None = None) -> tuple[int, Any, Any]:
    return await asyncio.to_thread(fetch, port, path, token)


async def test_loopback_sees_everything_when_kop_has_no_token() -> None:
    port = free_port()
    async with gateway_with_hot_topic(1, admin_host="127.0.0.1", admin_port=port):
        status, _, body = await get(port, "/metrics")
        assert status == 200 and "kop_connections" in body
        status, _, body = await get(port, "/v1/instances")
        assert status == 200 and [i["node_id"] for i in body["instances"]] == [0]
        assert (await get(port, "/v1/groups"))[0] == 200
        assert (await get(port, "/v1/topics"))[0] == 200


async def test_a_peer_elsewhere_is_refused_whatever_its_headers_say() -> None:
    """The app's own guard, on a request whose TCP peer is not loopback (a test cannot
    connect from elsewhere): the peer's address decides, not X-Forwarded-For."""
    port = free_port()
    async with gateway_with_hot_topic(1, admin_host="127.0.0.1", admin_port=port) as (gw, _):
        server = gw.running.http
        assert server is not None
        reached: list[str] = []

        async def handler(request: web.Request) -> web.Response:
            reached.append(request.path)
            return web.Response(text="shown")

        for peer, path, shown in [
            ("192.0.2.7", "/metrics", False),
            ("192.0.2.7", "/v1/instances", False),
            ("192.0.2.7", "/healthz", True),
            ("127.0.0.1", "/metrics", True),
        ]:
            transport = mock.Mock()
            transport.get_extra_info.side_effect = lambda name, peer=peer: (
                (peer, 40000) if name == "peername" else None
            )
            headers = CIMultiDict({"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1"})
            request = make_mocked_request("GET", path, headers=headers, transport=transport)
            answer = await server._guard(request, handler)
            assert (answer.status == 200) is shown, (peer, path)
            if not shown:
                assert answer.status == 401
                assert answer.headers["WWW-Authenticate"] == "Bearer"
                assert isinstance(answer, web.Response) and answer.text is not None
                assert "set admin_token" in json.loads(answer.text)["error"]
        assert reached == ["/healthz", "/metrics"]


async def test_the_admin_token_once_set_is_needed_even_from_loopback() -> None:
    port = free_port()
    config = {"admin_host": "127.0.0.1", "admin_port": port, "admin_token": TOKEN}
    async with gateway_with_hot_topic(1, **config):
        for path in ("/healthz", "/readyz"):
            assert (await get(port, path))[0] == 200
        for path in GUARDED:
            for token in (None, "wrong", TOKEN[:-1]):
                status, headers, body = await get(port, path, token)
                assert status == 401, (path, token)
                assert headers["WWW-Authenticate"] == "Bearer"
                assert "admin token" in body["error"]
        status, _, body = await get(port, "/metrics", TOKEN)
        assert status == 200 and "kop_connections" in body
        status, _, body = await get(port, "/v1/instances", TOKEN)
        assert status == 200 and body["node_id"] == 0
        for path in ("/v1/groups", "/v1/topics"):
            assert (await get(port, path, TOKEN))[0] == 200
        assert (await get(port, "/nowhere", TOKEN))[0] == 404
        # what kop groups sends: KOP_ADMIN_TOKEN, the same variable kop reads it from
        url = f"http://127.0.0.1:{port}"
        runner = CliRunner()
        done = await asyncio.to_thread(
            runner.invoke, groups, ["list", "--json", "--admin-url", url],
            env={"KOP_ADMIN_TOKEN": TOKEN},
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        assert json.loads(done.output) == []
        refused = await asyncio.to_thread(
            runner.invoke, groups, ["list", "--admin-url", url], env={"KOP_ADMIN_TOKEN": ""}
        )
        assert refused.exit_code == 1 and "the admin token is needed" in refused.output


async def test_an_unreadable_admin_token_file_stops_the_start(tmp_path: Path) -> None:
    from kop.wiring.errors import StartupError

    with pytest.raises(StartupError, match="admin_token: cannot read"):
        async with gateway_with_hot_topic(
            1, admin_host="127.0.0.1", admin_port=free_port(),
            admin_token=f"file://{tmp_path}/missing",
        ):  # fmt: skip
            pass
