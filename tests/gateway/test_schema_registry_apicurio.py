"""The registry's Apicurio v2 face (kop/registry/apicurio.py), called as Apicurio's Java
serdes 2.6 call it (tests/integration/test_registry_java.py runs the serdes
themselves): one registry behind both APIs, Apicurio's error JSON, and the same
credentials and tenancy as Confluent's API."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import aiohttp

from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.permissions import CONSUME, PRODUCE
from tests.gateway.registry_harness import USER_V1, USER_V2, avro, registry, run
from tests.sim.memory_admin import MemoryBackend
from tests.tls_material import TokenKeys

API = "/apis/registry/v2"
ARTIFACTS = f"{API}/groups/default/artifacts"


async def call(
    http: aiohttp.ClientSession, method: str, url: str, body: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:  # fmt: skip
    """As the serdes send it: JSON content type on every request, the schema raw."""
    sent = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
    async with http.request(method, url, data=body, headers=sent) as answer:
        text = await answer.text()
        try:
            return answer.status, json.loads(text)
        except ValueError:
            return answer.status, text


async def test_the_serdes_calls_register_look_up_and_read_one_registry() -> None:
    async with registry() as (client, _, _g):
        url = client._rest_client.base_urls[0]
        user_v1 = json.dumps(USER_V1)
        async with aiohttp.ClientSession() as http:
            # auto-register (the serializer's usual mode)
            named = {"X-Registry-ArtifactId": "users-value", "X-Registry-ArtifactType": "AVRO"}
            status, meta = await call(
                http, "POST", f"{url}{ARTIFACTS}?ifExists=RETURN_OR_UPDATE&canonical=false",
                user_v1, named,
            )  # fmt: skip
            assert status == 200
            assert (meta["globalId"], meta["contentId"], meta["version"]) == (1, 1, "1")
            assert (meta["groupId"], meta["id"], meta["type"]) == ("default", "users-value", "AVRO")
            # the same id through Confluent's API
            assert (await run(client.get_latest_version, "users-value")).schema_id == 1
            # look-up by content (no auto-register), whatever the spacing
            status, found = await call(
                http, "POST", f"{url}{ARTIFACTS}/users-value/meta?canonical=true",
                json.dumps(USER_V1, indent=2),
            )  # fmt: skip
            assert (status, found["contentId"]) == (200, 1)
            # find-latest, then the schema and its references by id
            await run(client.register_schema, "users-value", avro(USER_V2))
            status, latest = await call(http, "GET", f"{url}{ARTIFACTS}/users-value/meta")
            assert (status, latest["version"], latest["globalId"]) == (200, "2", 2)
            status, v1 = await call(http, "GET", f"{url}{ARTIFACTS}/users-value/versions/1/meta")
            assert (status, v1["contentId"]) == (200, 1)
            for kind in ("globalIds", "contentIds"):
                assert await call(http, "GET", f"{url}{API}/ids/{kind}/2?dereference=false") == (
                    200, USER_V2,
                )  # fmt: skip
                assert await call(http, "GET", f"{url}{API}/ids/{kind}/2/references") == (200, [])


async def test_refusals_carry_the_name_a_java_client_throws() -> None:
    async with registry() as (client, _, _g):
        url = client._rest_client.base_urls[0]
        async with aiohttp.ClientSession() as http:
            status, error = await call(http, "GET", f"{url}{ARTIFACTS}/nobody-value/meta")
            assert (status, error["name"]) == (404, "ArtifactNotFoundException")
            status, error = await call(http, "GET", f"{url}{API}/ids/contentIds/77")
            assert (status, error["name"]) == (404, "ContentNotFoundException")
            status, error = await call(
                http, "POST", f"{url}{ARTIFACTS}?ifExists=RETURN_OR_UPDATE", "{not avro",
                {"X-Registry-ArtifactId": "bad-value"},
            )  # fmt: skip
            assert (status, error["name"]) == (422, "InvalidArtifactException")
            status, error = await call(http, "GET", f"{url}{API}/groups/other/artifacts/a/meta")
            assert (status, error["name"]) == (404, "ArtifactNotFoundException")
            assert "one group" in error["message"]
            # ifExists as Apicurio reads it
            headers = {"X-Registry-ArtifactId": "users-value"}
            user_v1 = json.dumps(USER_V1)
            first = await call(http, "POST", f"{url}{ARTIFACTS}?ifExists=FAIL", user_v1, headers)
            assert first[0] == 200
            status, error = await call(
                http, "POST", f"{url}{ARTIFACTS}?ifExists=FAIL", user_v1, headers
            )
            assert status == 409
            status, meta = await call(
                http, "POST", f"{url}{ARTIFACTS}?ifExists=RETURN", json.dumps(USER_V2), headers
            )
            assert (status, meta["version"]) == (200, "1")  # the latest, nothing registered
            incompatible = json.dumps({**USER_V1, "fields": [{"name": "name", "type": "int"}]})
            status, error = await call(
                http, "POST", f"{url}{ARTIFACTS}?ifExists=UPDATE", incompatible, headers
            )
            assert (status, error["name"]) == (409, "RuleViolationException")


async def test_basic_credentials_select_the_tenant_as_on_confluents_api(tmp_path: Path) -> None:
    backend = MemoryBackend()
    acme, globex = Namespace("acme", "orders"), Namespace("globex", "main")
    for ns, name in ((acme, "t1"), (globex, "secret")):
        await backend.admin.serve_namespace(ns)
        await backend.admin.create_partitioned(PulsarTopic(ns, name, name), 1, {})
    await backend.permissions.grant(acme, None, "alice", frozenset({PRODUCE, CONSUME}))
    keys = TokenKeys.make(tmp_path)
    config = {"auth_token_secret_key": keys.spec, "authorization_enabled": True}
    async with registry(backend, **config) as (client, _, _g):
        url = client._rest_client.base_urls[0]

        def basic(ns: Namespace, role: str) -> dict[str, str]:
            user_pass = f"{ns.path}:token:{keys.token(role)}".encode()
            return {"Authorization": "Basic " + base64.b64encode(user_pass).decode()}

        async with aiohttp.ClientSession() as http:
            register = f"{url}{ARTIFACTS}?ifExists=RETURN_OR_UPDATE"
            as_alice = {"X-Registry-ArtifactId": "t1-value", **basic(acme, "alice")}
            status, meta = await call(http, "POST", register, json.dumps(USER_V1), as_alice)
            assert (status, meta["contentId"]) == (200, 1)
            status, error = await call(http, "GET", f"{url}{API}/ids/contentIds/1")
            assert (status, error["name"]) == (401, "NotAuthorizedException")
            in_globex = basic(globex, "alice")
            status, error = await call(http, "GET", f"{url}{API}/ids/contentIds/1", None, in_globex)
            assert (status, error["name"]) == (403, "ForbiddenException")
            mine = basic(acme, "alice")
            assert (await call(http, "GET", f"{url}{API}/ids/contentIds/1", None, mine))[0] == 200
