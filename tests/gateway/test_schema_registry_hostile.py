"""The Schema Registry against what a hostile or broken client sends: every answer is
Confluent's JSON with a status below 500 (the storage is up), nothing it sends is held
without bound, and a namespace's subjects and versions are limited."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import aiohttp

from tests.gateway.registry_harness import USER_V1, USER_V2, avro, refused, registry, run

WORDS = [
    "subjects", "versions", "schemas", "ids", "config", "mode", "compatibility", "latest",
    "types", "schema", "-1", "0", "1", "2147483648", "99999999999999999999", "x-value",
    "%2F", "..", "%00", "é", "a" * 600, "True", "x-value", "com.example.User",
    "persistent:%2F%2Fpublic%2Fdefault%2Fx-value",
]  # fmt: skip
BODIES: list[Any] = [
    None, "", "not json", [], 1, {"schema": 5}, {"schema": ""}, {"schema": "{" * 5000},
    {"schema": json.dumps(USER_V1), "schemaType": "PROTOBUF"},
    {"schema": json.dumps(USER_V1), "references": [{"name": "x", "subject": "y", "version": 1}]},
    {"schema": json.dumps(USER_V1)}, {"compatibility": "FULL"}, {"compatibility": 7},
    {"mode": "IMPORT"}, {"mode": "READWRITE"}, {"schema": "[" * 20000 + "]" * 20000},
    {"schema": '{"type": 5}', "schemaType": "JSON"}, {"schema": "true", "schemaType": "JSON"},
    {"schema": json.dumps(USER_V1), "schemaType": "JSON"},
]  # fmt: skip


def _deep(n: int) -> str:
    """An object nested n deep, as text (json.dumps itself would not go that deep)."""
    return '{"type":"object","required":["a"],"properties":{"a":' * n + "{}" + "}}" * n


# JSON Schemas built to cost: deep, wide, self-referring, referring in a loop
HOSTILE_JSON = [
    _deep(600),
    _deep(5000),
    json.dumps(
        {"anyOf": [{"type": "object", "properties": {f"p{i}": {"minimum": i}}}
                   for i in range(3000)]}
    ),
    json.dumps({"$ref": "#"}),
    json.dumps(
        {"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
         "type": "object", "properties": {"x": {"$ref": "#/definitions/a"}}}
    ),
]  # fmt: skip
BODIES += [{"schema": h, "schemaType": "JSON"} for h in HOSTILE_JSON]
BODIES += [
    {"schema": "CgVhLnByb3Rv", "schemaType": "PROTOBUF"},  # a file with a name alone
    {"schema": "////", "schemaType": "PROTOBUF"}, {"schema": "{", "schemaType": "PROTOBUF"},
    {"schema": "Cg" * 1000, "schemaType": "PROTOBUF"},
    # .proto text: refused by protoc, importing files that are not there or outside
    {"schema": 'syntax = "proto3"; message {', "schemaType": "PROTOBUF"},
    {"schema": 'syntax = "proto3"; import "/etc/passwd"; message A {}', "schemaType": "PROTOBUF"},
    {"schema": 'syntax = "proto3"; import "../../x.proto"; message A {}',
     "schemaType": "PROTOBUF",
     "references": [{"name": "../../x.proto", "subject": "x-value", "version": 1}]},
    {"schema": 'syntax = "proto3"; message A {' + "message B {" * 200 + "}" * 201,
     "schemaType": "PROTOBUF"},
    {"schema": json.dumps(USER_V1),
     "references": [{"name": f"n{i}", "subject": "x-value", "version": 1} for i in range(500)]},
    {"schema": json.dumps(USER_V1), "references": [{"name": "n", "subject": "x-value",
                                                    "version": 2**40}]},
]  # fmt: skip


# The API's own paths, with client-chosen parts filled from WORDS (most requests reach a
# handler), and now and then a path of random words.
SHAPES = [
    "/subjects", "/subjects/{}", "/subjects/{}/versions", "/subjects/{}/versions/{}",
    "/subjects/{}/versions/{}/schema", "/schemas/ids/{}", "/schemas/ids/{}/subjects",
    "/schemas/ids/{}/versions", "/compatibility/subjects/{}/versions/{}", "/config",
    "/config/{}", "/mode", "/mode/{}", "/subjects?deleted={}", "/subjects/{}?permanent={}",
    # Apicurio's v2 face (kop/registry/apicurio.py)
    "/apis/registry/v2/groups/{}/artifacts", "/apis/registry/v2/groups/{}/artifacts/{}/meta",
    "/apis/registry/v2/groups/default/artifacts?ifExists={}",
    "/apis/registry/v2/groups/default/artifacts/{}/versions/{}/meta",
    "/apis/registry/v2/ids/globalIds/{}", "/apis/registry/v2/ids/contentIds/{}/references",
]  # fmt: skip


def requests(seed: int, n: int) -> list[tuple[str, str, Any]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < 0.1:
            path = "/" + "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
        else:
            shape = rng.choice(SHAPES)
            path = shape.format(*(rng.choice(WORDS) for _ in range(shape.count("{}"))))
        out.append((rng.choice(["GET", "POST", "PUT", "DELETE"]), path, rng.choice(BODIES)))
    return out


async def test_whatever_is_sent_the_answer_is_confluents_json_below_500() -> None:
    async with registry() as (client, _, _g):
        url = client._rest_client.base_urls[0]
        await run(client.register_schema, "x-value", avro(USER_V1))
        async with aiohttp.ClientSession() as http:
            for method, path, body in requests(seed=38, n=400):
                data = body if isinstance(body, str) else json.dumps(body)
                async with http.request(method, url + path, data=data) as answer:
                    text = await answer.text()
                    assert answer.status < 500, (method, path, body, answer.status, text)
                    if answer.status >= 400:
                        error = json.loads(text)
                        assert isinstance(error["error_code"], int), text
                        assert isinstance(error["message"], str), text
                        if path.startswith("/apis/"):
                            assert isinstance(error["name"], str), text  # Apicurio's
            # too large a body is refused before it is read whole
            big = json.dumps({"schema": "x" * (3 << 20)})
            async with http.post(url + "/subjects/x-value/versions", data=big) as answer:
                assert answer.status == 413
        # the registry goes on answering: a schema registered now reads back by its id
        fresh = await run(client.register_schema, "com.example.Fresh", avro(USER_V2))
        assert json.loads((await run(client.get_schema, fresh)).schema_str) == USER_V2


async def test_a_namespace_holds_a_bounded_number_of_subjects_and_versions() -> None:
    limits = {"schema_registry_max_subjects": 2, "schema_registry_max_versions": 1}
    async with registry(**limits) as (client, _, _g):
        await run(client.register_schema, "a-value", avro(USER_V1))
        await run(client.register_schema, "com.example.B", avro(USER_V1))
        assert (await run(refused, lambda: client.register_schema("c-value", avro(USER_V1)))) == (
            422,
            42205,
        )
        assert (
            await run(refused, lambda: client.register_schema("com.example.C", avro(USER_V1)))
        ) == (422, 42205)
        # a version more of a subject there already is refused alike, in both kinds
        assert (await run(refused, lambda: client.register_schema("a-value", avro(USER_V2)))) == (
            422,
            42205,
        )
        assert (
            await run(refused, lambda: client.register_schema("com.example.B", avro(USER_V2)))
        ) == (422, 42205)
        # what is there already is still answered
        assert await run(client.register_schema, "a-value", avro(USER_V1)) == 1


async def test_connections_past_the_limit_are_closed_and_the_others_served() -> None:
    async with registry(schema_registry_max_connections=3) as (client, _, _g):
        port = int(client._rest_client.base_urls[0].rsplit(":", 1)[1])
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        async with asyncio.timeout(10):
            assert await reader.read() == b""  # closed once accepted
        writer.close()
        # a held one is served
        r, w = held[0]
        w.write(b"GET /subjects HTTP/1.1\r\nHost: x\r\n\r\n")
        await w.drain()
        async with asyncio.timeout(10):
            assert (await r.readline()).startswith(b"HTTP/1.1 200")
        for _r, w in held:
            w.close()


async def test_hostile_json_schemas_are_answered_and_checked_against_each_other() -> None:
    """Schemas a client shaped to cost kop: each is answered (registered or refused with
    Confluent's codes), and checking each against every other registered one ends."""
    async with registry() as (client, _, _g):
        url = client._rest_client.base_urls[0]
        async with aiohttp.ClientSession() as http:
            async with http.put(url + "/config", json={"compatibility": "NONE"}) as a:
                assert a.status == 200
            answers = []
            for hostile in HOSTILE_JSON:
                for subject in ("h-key", "h-value"):
                    body = {"schema": hostile, "schemaType": "JSON"}
                    async with http.post(f"{url}/subjects/{subject}/versions", json=body) as a:
                        answers.append((subject, a.status, await a.json()))
            assert all(status in (200, 409, 422) for _, status, _ in answers), answers
            # no Avro form, so never a topic's schema
            assert {status for subject, status, _ in answers if subject == "h-value"} == {422}
            level = {"compatibility": "FULL_TRANSITIVE"}
            async with http.put(url + "/config", json=level) as a:
                assert a.status == 200
            keyed = [status for subject, status, _ in answers if subject == "h-key"]
            taken = [h for h, status in zip(HOSTILE_JSON, keyed, strict=True) if status == 200]
            assert len(taken) >= 3  # the rest are no JSON Schema (too deep for the metaschema)
            for hostile in taken:
                body = {"schema": hostile, "schemaType": "JSON"}
                check = f"{url}/compatibility/subjects/h-key/versions?verbose=true"
                async with http.post(check, json=body) as a:
                    assert a.status == 200, await a.text()
                    assert isinstance((await a.json())["is_compatible"], bool)
