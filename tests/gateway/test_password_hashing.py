"""PLAIN logins against SCRAM users (issue 33, finding 6): the PBKDF2 runs off the event
loop, and a user who does not exist costs the same hashing as a wrong password, so
neither a flood of logins stalls the instance nor the time of a refusal tells who has
an account. Before, the hash ran on the loop (16 ms per login, every connection
waiting) and an unknown user was refused at once."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

import kop.sasl.scram_users as credentials
from kop.sasl.mechanisms import SCRAM_SHA_512
from kop.sasl.scram import MIN_ITERATIONS, ScramCredential, from_password
from kop.sasl.scram_users import ScramUsers
from kop.security.errors import AuthenticationFailed
from tests.gateway.test_scram import _alter, _root, _signs_in, scram_gateway
from tests.sim.memory_admin import MemoryCredentials


async def test_an_unknown_user_is_hashed_as_long_as_a_wrong_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    users = ScramUsers(MemoryCredentials())
    alice = from_password(SCRAM_SHA_512, "secret", b"s" * 16, MIN_ITERATIONS)
    await users.upsert("alice", SCRAM_SHA_512, alice)
    hashed: list[tuple[str, int]] = []
    real = hashlib.pbkdf2_hmac

    def spy(name: str, password: bytes, salt: bytes, rounds: int) -> bytes:
        hashed.append((name, rounds))
        return real(name, password, salt, rounds)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", spy)
    refusals = []
    for user in ("alice", "nobody"):
        with pytest.raises(AuthenticationFailed) as refused:
            users.check_password(user, "wrong")
        refusals.append(str(refused.value).replace(repr(user), "U"))
    assert hashed == [("sha512", MIN_ITERATIONS)] * 2
    assert refusals[0] == refusals[1]
    assert users.check_password("alice", "secret") == "alice"


async def test_plain_against_a_scram_user_hashes_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    real = credentials.password_matches

    def spy(mechanism: str, cred: ScramCredential, password: str) -> bool:
        threads.append(threading.current_thread().name)
        return real(mechanism, cred, password)

    monkeypatch.setattr(credentials, "password_matches", spy)
    async with scram_gateway(tmp_path) as (_gateway, port, keys):
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
        upsert = UserScramCredentialUpsertion("alice", info, b"secret-a")
        assert await asyncio.to_thread(_alter, _root(port, keys), [upsert]) == {"alice": 0}
        assert await asyncio.to_thread(_signs_in, port, "PLAIN", "alice", "secret-a") == 0
        assert await asyncio.to_thread(_signs_in, port, "PLAIN", "nobody", "x") != 0
    assert len(threads) >= 2
    assert all(name.startswith("kop-password-hash") for name in threads), threads
