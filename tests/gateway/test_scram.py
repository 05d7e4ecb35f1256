"""SCRAM as Kafka serves it: RFC 7677's exchange byte for byte, users made with
AlterUserScramCredentials (as kafka-configs makes them) signing in with librdkafka
and kafka-python, their PLAIN passwords, and refusals that tell nobody which users
exist."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaAdminClient  # type: ignore[import-untyped]

from kop.config.settings import KopConfig
from kop.sasl.scram import ScramServer, from_password
from kop.sasl.scram_users import ScramUsers
from kop.security.errors import AuthenticationFailed
from kop.storage.naming import Namespace
from kop.wiring.app import Gateway
from tests.gateway.memory_gateway import free_port
from tests.sim.memory_admin import MemoryBackend, MemoryCredentials
from tests.tls_material import TokenKeys

NS = Namespace("public", "default")
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
FINAL = (f"c=biws,r={CLIENT_NONCE}{SERVER_NONCE},"
         "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")  # fmt: skip


def rfc7677_server(users: dict[str, Any]) -> ScramServer:
    return ScramServer("SCRAM-SHA-256", lambda u, m: users.get(u), NS, b"k" * 32,
                       nonce=lambda: SERVER_NONCE)  # fmt: skip


def test_rfc_7677_exchange() -> None:
    cred = from_password("SCRAM-SHA-256", "pencil", SALT, 4096)
    server = rfc7677_server({"user": cred})
    first = server.step(f"n,,n=user,r={CLIENT_NONCE}".encode())
    assert first.challenge.decode() == (
        f"r={CLIENT_NONCE}{SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = server.step(FINAL.encode())
    assert final.challenge == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert final.principal is not None and final.principal.role == "user"


def test_wrong_password_unknown_user_and_replay_fail_alike_at_the_end() -> None:
    wrong = from_password("SCRAM-SHA-256", "not-pencil", SALT, 4096)
    for users in ({"user": wrong}, {}):
        server = rfc7677_server(users)
        server.step(f"n,,n=user,r={CLIENT_NONCE}".encode())  # a challenge either way
        with pytest.raises(AuthenticationFailed, match="authentication of 'user' failed"):
            server.step(FINAL.encode())
    # the same final message against a fresh server nonce: a replay
    cred = from_password("SCRAM-SHA-256", "pencil", SALT, 4096)
    fresh = ScramServer("SCRAM-SHA-256", lambda u, m: cred, NS, b"k" * 32)
    fresh.step(f"n,,n=user,r={CLIENT_NONCE}".encode())
    with pytest.raises(AuthenticationFailed, match="nonce"):
        fresh.step(FINAL.encode())
    for garbage in (b"", b"n,,", b"p=tls-unique,,n=u,r=x", b"n,,n=u,r=x,m=ext", b"x" * 5000,
                    b"n,,n=a=bad,r=x", b"\xff\xfe"):  # fmt: skip
        with pytest.raises(AuthenticationFailed):
            rfc7677_server({}).step(garbage)


@contextlib.asynccontextmanager
async def scram_gateway(tmp_path: Path) -> AsyncIterator[tuple[Gateway, int, TokenKeys]]:
    keys = TokenKeys.make(tmp_path)
    port = free_port()
    config = KopConfig(
        listeners=f"SASL_PLAINTEXT://127.0.0.1:{port}",
        sasl_enabled_mechanisms="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        auth_token_secret_key=keys.spec, superuser_roles="root",
        admin_port=0,
    )  # fmt: skip
    gateway = Gateway(config, MemoryBackend())
    await gateway.start()
    try:
        yield gateway, port, keys
    finally:
        await gateway.stop()


def _root(port: int, keys: TokenKeys) -> dict[str, Any]:
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": "public/default",
            "sasl.password": "token:" + keys.token("root")}  # fmt: skip


def _alter(conf: dict[str, Any], changes: list[Any]) -> dict[str, int]:
    admin = AdminClient(conf)
    out = {}
    for user, future in admin.alter_user_scram_credentials(changes).items():
        try:
            future.result(timeout=15)
            out[user] = 0
        except Exception as exc:
            out[user] = int(exc.args[0].code())
    return out


def _described(conf: dict[str, Any]) -> dict[str, list[tuple[str, int]]]:
    admin = AdminClient(conf)
    found = admin.describe_user_scram_credentials().result(timeout=15)
    return {u: sorted((i.mechanism.name, i.iterations) for i in d.scram_credential_infos)
            for u, d in found.items()}  # fmt: skip


def _signs_in(port: int, mechanism: str, user: str, password: str) -> int:
    errors: list[KafkaError] = []
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": mechanism, "sasl.username": user, "sasl.password": password,
            "error_cb": errors.append}  # fmt: skip
    admin = AdminClient(conf)
    for _ in range(40):
        try:
            admin.list_topics(timeout=0.5)
            return 0
        except Exception:
            admin.poll(0.1)  # error_cb is served by poll
            if errors:
                return int(errors[0].code())
    return -1


async def test_users_made_with_alter_user_scram_credentials_sign_in(tmp_path: Path) -> None:
    async with scram_gateway(tmp_path) as (_gateway, port, keys):
        root = _root(port, keys)
        sha512, sha256 = ScramMechanism.SCRAM_SHA_512, ScramMechanism.SCRAM_SHA_256
        upserts = [
            UserScramCredentialUpsertion("alice", ScramCredentialInfo(sha512, 8192), b"secret-a"),
            UserScramCredentialUpsertion("bob", ScramCredentialInfo(sha256, 4096), b"secret-b"),
        ]
        assert await asyncio.to_thread(_alter, root, upserts) == {"alice": 0, "bob": 0}
        assert await asyncio.to_thread(_described, root) == {
            "alice": [("SCRAM_SHA_512", 8192)],
            "bob": [("SCRAM_SHA_256", 4096)],
        }
        assert await asyncio.to_thread(_signs_in, port, "SCRAM-SHA-512", "alice", "secret-a") == 0
        assert await asyncio.to_thread(_signs_in, port, "SCRAM-SHA-256", "bob", "secret-b") == 0
        assert await asyncio.to_thread(_signs_in, port, "PLAIN", "alice", "secret-a") == 0
        refused = KafkaError._AUTHENTICATION
        for mech, user, password in (("SCRAM-SHA-512", "alice", "nope"),
                                     ("SCRAM-SHA-512", "nobody", "nope"),
                                     ("SCRAM-SHA-256", "alice", "secret-a"),  # no 256 credential
                                     ("PLAIN", "alice", "nope")):  # fmt: skip
            assert await asyncio.to_thread(_signs_in, port, mech, user, password) == refused
        # kafka-python's SCRAM client too
        kp = await asyncio.to_thread(  # it connects at once: not on the gateway's loop
            KafkaAdminClient, bootstrap_servers=f"127.0.0.1:{port}",
            security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="bob", sasl_plain_password="secret-b", request_timeout_ms=10000,
        )  # fmt: skip
        assert isinstance(await asyncio.to_thread(kp.list_topics), list)
        kp.close()
        # Kafka's checks: too few iterations; deleting what is not there; only superusers
        few = UserScramCredentialUpsertion(
            "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100), b"x"
        )
        gone = UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_256)
        assert await asyncio.to_thread(_alter, root, [few, gone]) == {
            "carol": KafkaError.UNACCEPTABLE_CREDENTIAL,
            "dave": KafkaError.RESOURCE_NOT_FOUND,
        }
        bob = {
            **root,
            "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": "bob",
            "sasl.password": "secret-b",
        }
        assert await asyncio.to_thread(_alter, bob, upserts[:1]) == {
            "alice": KafkaError.CLUSTER_AUTHORIZATION_FAILED
        }
        delete = [UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_512)]
        assert await asyncio.to_thread(_alter, root, delete) == {"alice": 0}
        assert (
            await asyncio.to_thread(_signs_in, port, "SCRAM-SHA-512", "alice", "secret-a")
            == refused
        )


class _SlowCredentials(MemoryCredentials):
    """The Pulsar admin API's latency: every call lets others run in between."""

    async def load(self) -> dict[tuple[str, str], str]:
        await asyncio.sleep(0)
        return await super().load()

    async def save(self, key: tuple[str, str], record: str) -> None:
        await asyncio.sleep(0)
        await super().save(key, record)


async def test_two_instances_altering_one_user_at_once_both_hold() -> None:
    store = _SlowCredentials()
    a, b = ScramUsers(store), ScramUsers(store)  # two kop instances over one Pulsar
    c256 = from_password("SCRAM-SHA-256", "x", SALT, 4096)
    c512 = from_password("SCRAM-SHA-512", "y", SALT, 4096)
    await asyncio.gather(a.upsert("u", "SCRAM-SHA-256", c256), b.upsert("u", "SCRAM-SHA-512", c512))
    third = ScramUsers(store)
    await third.refresh()
    assert third.describe(["u"]) == {"u": {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096}}
    assert await a.remove("u", "SCRAM-SHA-512")  # removed by the one that did not make it
    assert not await b.remove("u", "SCRAM-SHA-512")
    await third.refresh()
    assert third.describe(None) == {"u": {"SCRAM-SHA-256": 4096}}
