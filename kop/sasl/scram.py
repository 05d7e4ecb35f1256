"""SCRAM-SHA-256 and -512 (RFC 5802, RFC 7677) as Kafka's brokers serve them: the server
keeps only the salted keys, never the password; Kafka's bounds on iterations.

An unknown user gets a challenge like any other (a salt derived from the name and a
secret), and the exchange fails only at its end, as a wrong password does: nothing
tells a client which users exist.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from kop.sasl.mechanisms import SCRAM_SHA_256, SCRAM_SHA_512, Step
from kop.security.errors import AuthenticationFailed
from kop.security.principal import Principal
from kop.storage.naming import Namespace

HASHES = {SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}
MIN_ITERATIONS = 4096  # Kafka's ScramMechanism bounds
MAX_ITERATIONS = 16384
_MAX_MESSAGE = 4096


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, name).digest()


def from_salted_password(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """What AlterUserScramCredentials gives (the client salts the password)."""
    name = HASHES[mechanism]
    client_key = _hmac(name, salted, b"Client Key")
    stored = hashlib.new(name, client_key).digest()
    return ScramCredential(salt, stored, _hmac(name, salted, b"Server Key"), iterations)


def from_password(mechanism: str, password: str, salt: bytes, iterations: int) -> ScramCredential:
    salted = hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)
    return from_salted_password(mechanism, salted, salt, iterations)


def password_matches(mechanism: str, cred: ScramCredential, password: str) -> bool:
    """A PLAIN password checked against a SCRAM credential."""
    mine = from_password(mechanism, password, cred.salt, cred.iterations)
    return hmac.compare_digest(mine.stored_key, cred.stored_key)


Lookup = Callable[[str, str], ScramCredential | None]  # (user, mechanism) -> credential


class ScramServer:
    """One server side of an exchange: client-first, then client-final."""

    costly = False  # the client did the PBKDF2; the server compares HMACs

    def __init__(self, mechanism: str, lookup: Lookup, namespace: Namespace, decoy_key: bytes,
                 nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24)) -> None:  # fmt: skip
        self.name = mechanism
        self._hash = HASHES[mechanism]
        self._lookup = lookup
        self._namespace = namespace
        self._decoy_key = decoy_key
        self._nonce = nonce
        self._state: tuple[str, str, str, ScramCredential | None, str] | None = None

    def step(self, client: bytes) -> Step:
        if len(client) > _MAX_MESSAGE:
            raise AuthenticationFailed("SCRAM message too long")
        try:
            text = client.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed("SCRAM message is not UTF-8") from None
        if self._state is None:
            return self._first(text)
        return self._final(text)

    def _first(self, text: str) -> Step:
        gs2, sep, bare = _split_gs2(text)
        attrs = _attributes(bare)
        user, client_nonce = _unescape(attrs.get("n", "")), attrs.get("r", "")
        if not sep or not user or not client_nonce or "m" in attrs:
            raise AuthenticationFailed("SCRAM client-first message is malformed")
        if attrs.get("tokenauth") is not None:
            raise AuthenticationFailed("delegation tokens are not served")
        cred = self._lookup(user, self.name)
        salt, iterations = (
            (cred.salt, cred.iterations) if cred else (self._decoy(user), MIN_ITERATIONS)
        )
        nonce = client_nonce + self._nonce()
        first = f"r={nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        self._state = (gs2, bare, first, cred, user)
        return Step(first.encode())

    def _final(self, text: str) -> Step:
        assert self._state is not None
        gs2, client_first, server_first, cred, user = self._state
        without_proof, _, proof_part = text.rpartition(",p=")
        attrs = _attributes(without_proof)
        if attrs.get("r") != server_first.split(",", 1)[0][2:]:
            raise AuthenticationFailed("SCRAM nonce does not match (a replayed exchange?)")
        if attrs.get("c") != base64.b64encode(gs2.encode()).decode():
            raise AuthenticationFailed("SCRAM channel binding differs from the first message")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except (binascii.Error, ValueError):
            raise AuthenticationFailed("SCRAM proof is not base64") from None
        auth_message = f"{client_first},{server_first},{without_proof}".encode()
        if cred is None or len(proof) != len(cred.stored_key):
            raise AuthenticationFailed(f"SCRAM authentication of {user!r} failed")
        signature = _hmac(self._hash, cred.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), cred.stored_key):
            raise AuthenticationFailed(f"SCRAM authentication of {user!r} failed")
        verifier = base64.b64encode(_hmac(self._hash, cred.server_key, auth_message)).decode()
        return Step(f"v={verifier}".encode(), Principal(user, self._namespace, self.name))

    def _decoy(self, user: str) -> bytes:
        return _hmac("sha256", self._decoy_key, user.encode())[:16]


def _split_gs2(text: str) -> tuple[str, bool, str]:
    """('n,,' or 'n,a=..,' gs2 header, whether there is one, client-first-bare)."""
    parts = text.split(",", 2)
    if (
        len(parts) != 3
        or parts[0] not in ("n", "y")
        or (parts[1] and not parts[1].startswith("a="))
    ):
        return "", False, ""
    return f"{parts[0]},{parts[1]},", True, parts[2]


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in message.split(","):
        key, sep, value = item.partition("=")
        if not sep or key in out:
            raise AuthenticationFailed("SCRAM attribute malformed or repeated")
        out[key] = value
    return out


def _unescape(name: str) -> str:
    """RFC 5802 saslname: '=2C' is ',', '=3D' is '='; any other '=' is malformed."""
    out = name.replace("=2C", ",").replace("=3D", "=")
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise AuthenticationFailed("SCRAM username escapes are malformed")
    return out
