"""The admin REST as kop's role meets it on a shared cluster (issue 19): credentials
on every call, also after a broker redirects the call to the topic's owner; several
hosts; and at start, one line that names what is wrong instead of a wait."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web

from kop.api.context import error_of
from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.preflight import Preflight, PreflightError
from kop.pulsar.wire import WireClient
from kop.pulsar.wire.auth import TokenAuth
from kop.pulsar.wire.options import ConnectOptions
from kop.storage.naming import Namespace
from kop.storage.types import AdminError, StorageUnavailable

TOKEN = ConnectOptions(auth=TokenAuth("token:the-token"))

Handler = Callable[[web.Request], Any]


async def _serve(handler: Handler) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, int(port)


@pytest.fixture
async def servers() -> AsyncIterator[list[web.AppRunner]]:
    started: list[web.AppRunner] = []
    yield started
    for runner in started:
        await runner.cleanup()


async def test_a_redirect_to_the_owning_broker_keeps_the_credentials(
    servers: list[web.AppRunner],
) -> None:
    async def owner(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer the-token":
            return web.json_response({"reason": "unauthenticated"}, status=401)
        return web.json_response({"partitions": 4, "properties": {}})

    runner, owner_port = await _serve(owner)
    servers.append(runner)

    async def other(request: web.Request) -> web.Response:
        location = f"http://127.0.0.1:{owner_port}{request.path_qs}"
        return web.Response(status=307, headers={"Location": location})

    runner, other_port = await _serve(other)
    servers.append(runner)
    admin = PulsarAdmin(f"http://127.0.0.1:{other_port}", options=TOKEN)
    meta = await admin._request("GET", "persistent/public/default/t/partitions")
    assert meta["partitions"] == 4
    await admin.close()


async def test_an_admin_url_of_several_hosts_goes_on_past_a_dead_one(
    servers: list[web.AppRunner],
) -> None:
    async def alive(request: web.Request) -> web.Response:
        return web.json_response(["public/default"])

    runner, port = await _serve(alive)
    servers.append(runner)
    admin = PulsarAdmin(f"http://127.0.0.1:1,127.0.0.1:{port}")
    assert await admin.namespaces_of("public") == ["public/default"]
    await admin.close()


async def test_a_gateway_error_is_no_answer_yet_not_a_refusal(
    servers: list[web.AppRunner],
) -> None:
    """A proxy whose broker was just killed answers 502 until the bundle has a new
    owner. A produce that needed the admin then must get a retriable error, which
    Kafka producers retry, not UNKNOWN_SERVER_ERROR, which fails the record (found
    by the cluster tier in CI)."""

    async def bad_gateway(request: web.Request) -> web.Response:
        return web.Response(status=502, text="<html><title>Error 502 Bad Gateway</title></html>")

    async def alive(request: web.Request) -> web.Response:
        return web.json_response(["public/default"])

    runner, dead = await _serve(bad_gateway)
    servers.append(runner)
    admin = PulsarAdmin(f"http://127.0.0.1:{dead}")
    with pytest.raises(StorageUnavailable) as raised:
        await admin.namespaces_of("public")
    code, message = error_of(raised.value)
    assert code.retriable and "502" in message
    await admin.close()
    runner, port = await _serve(alive)
    servers.append(runner)
    admin = PulsarAdmin(f"http://127.0.0.1:{dead},127.0.0.1:{port}")
    assert await admin.namespaces_of("public") == ["public/default"]
    await admin.close()


async def _preflight(port: int) -> Preflight:
    return Preflight(
        admin=PulsarAdmin(f"http://127.0.0.1:{port}", options=TOKEN),
        client=WireClient("pulsar://127.0.0.1:1"),
        http_url=f"http://127.0.0.1:{port}",
        service_url="pulsar://127.0.0.1:1",
        serving=Namespace("team", "kafka"),
        system=Namespace("team", "kop"),
        wait_s=2.0,
    )


async def test_refused_credentials_are_one_line_at_once(servers: list[web.AppRunner]) -> None:
    async def refuse(request: web.Request) -> web.Response:
        return web.json_response({"reason": "Authentication required"}, status=401)

    runner, port = await _serve(refuse)
    servers.append(runner)
    preflight = await _preflight(port)
    with pytest.raises(PreflightError, match=r"refused kop's credentials \(401\)"):
        await preflight.run()
    await preflight.admin.close()


async def test_a_policy_kops_role_may_not_set_names_the_permission_and_what_breaks(
    servers: list[web.AppRunner],
) -> None:
    """A role that may use the namespaces but not change their policies, on a
    cluster where nobody set deduplication for it."""

    async def limited(request: web.Request) -> web.Response:
        if request.method == "GET" and request.path == "/admin/v2/namespaces/team":
            return web.json_response(["team/kafka", "team/kop"])
        if request.method == "GET":
            return web.json_response(None)
        return web.json_response({"reason": "Unauthorized"}, status=403)

    runner, port = await _serve(limited)
    servers.append(runner)
    preflight = await _preflight(port)
    with pytest.raises(PreflightError) as caught:
        await preflight.run()
    line = str(caught.value)
    assert "\n" not in line
    assert "deduplication" in line and "team/kafka" in line
    assert "stored twice" in line and "admin of tenant team" in line
    await preflight.admin.close()


async def test_policies_already_set_by_the_platform_team_are_not_written_again(
    servers: list[web.AppRunner],
) -> None:
    written: list[str] = []
    policies: dict[str, Any] = {
        "deduplication": True,
        "inactiveTopicPolicies": {"deleteWhileInactive": False},
    }

    async def preset(request: web.Request) -> web.Response:
        policy = request.path.rsplit("/", 1)[-1]
        if request.method != "GET":
            written.append(policy)
            return web.json_response({"reason": "Unauthorized"}, status=403)
        return web.json_response(policies.get(policy))

    runner, port = await _serve(preset)
    servers.append(runner)
    admin = PulsarAdmin(f"http://127.0.0.1:{port}")
    for policy, wanted in (
        ("deduplication", True),
        ("inactiveTopicPolicies", {"deleteWhileInactive": False}),
    ):
        await admin.ensure_policy(Namespace("team", "kafka"), policy, wanted)
    assert written == []
    with pytest.raises(AdminError):
        await admin.ensure_policy(Namespace("team", "kafka"), "retention", {"x": 1})
    assert written == ["retention"]
    await admin.close()


async def test_an_unreachable_admin_is_waited_for_then_named(
    servers: list[web.AppRunner],
) -> None:
    preflight = await _preflight(1)
    with pytest.raises(PreflightError, match=r"unreachable.*still after 2s.*make pulsar-start"):
        await preflight.run()
    await preflight.admin.close()


async def test_oauth2_client_credentials_token_is_presented_and_renewed_before_expiry(
    servers: list[web.AppRunner], tmp_path: Any
) -> None:
    """Pulsar's AuthenticationOAuth2 flow: discovery, then the token endpoint with
    the credentials file's client id and secret and the audience."""
    from kop.pulsar.wire.auth import OAuth2Auth, OAuth2Params

    forms: list[dict[str, str]] = []

    async def issuer(request: web.Request) -> web.Response:
        if request.path == "/.well-known/openid-configuration":
            return web.json_response({"token_endpoint": f"{request.url.origin()}/oauth/token"})
        form = dict(await request.post())
        forms.append({k: str(v) for k, v in form.items()})
        # A lifetime of 0: the next use must fetch again.
        return web.json_response({"access_token": f"jwt-{len(forms)}", "expires_in": 0})

    runner, port = await _serve(issuer)
    servers.append(runner)
    creds = tmp_path / "creds.json"
    creds.write_text('{"client_id": "kop-app", "client_secret": "s3cret"}')
    auth = OAuth2Auth(OAuth2Params(f"http://127.0.0.1:{port}", creds, audience="urn:pulsar"))
    assert await auth.command_data() == b"jwt-1"
    assert await auth.http_headers() == {"Authorization": "Bearer jwt-2"}
    assert forms[0] == {
        "grant_type": "client_credentials",
        "client_id": "kop-app",
        "client_secret": "s3cret",
        "audience": "urn:pulsar",
    }
    await auth.close()
