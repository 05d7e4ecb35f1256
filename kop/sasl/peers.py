"""A kop instance's identity is a credential: the cluster secret every instance of one
cluster holds (docs/decisions.md D18).

Requests only kop instances make of each other (transaction markers, a write's
verification at its transaction coordinator) are taken only from a connection that
proved, by the SASL exchange `KOP-PEER`, that it holds the secret, never from what a
client calls itself. The exchange is a challenge-response over HMAC-SHA256, so the
secret never crosses the wire and a recorded exchange cannot be replayed:

    client: "kop-peer-v1" NUL instance NUL client-nonce
    server: server-nonce
    client: HMAC(secret, "kop-peer-v1" NUL instance NUL client-nonce NUL server-nonce)

The mechanism is accepted on every listener (PLAINTEXT too, as Kafka's brokers reach
each other over `inter.broker.listener.name`) and is never listed to clients. The
same secret signs each instance's heartbeats, so a heartbeat written to the members
topic by anyone else names no leader (`beat_proof`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from kop.sasl.mechanisms import Step
from kop.security.errors import AuthenticationFailed
from kop.security.principal import Principal
from kop.storage.naming import Namespace

PEER_MECHANISM = "KOP-PEER"
_VERSION = b"kop-peer-v1"
_NONCE_BYTES = 32
MAX_INSTANCE_ID = 128  # instance ids are uuid4 hex (32 characters)


class ClusterSecret:
    """The shared secret; it keys every proof and is never shown (not in repr)."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("cluster_secret must be at least 16 bytes")
        self._key = key

    def __repr__(self) -> str:
        return "ClusterSecret(***)"

    def mac(self, *parts: bytes) -> bytes:
        return hmac.new(self._key, b"\0".join(parts), hashlib.sha256).digest()

    def beat_proof(self, beat: bytes) -> str:
        """A heartbeat's signature (hex), over its encoding without the proof."""
        return self.mac(b"kop-beat-v1", beat).hex()

    def verifies_beat(self, beat: bytes, proof: str) -> bool:
        return hmac.compare_digest(self.beat_proof(beat), proof)


def first_message(instance: str) -> tuple[bytes, bytes]:
    """The client's first message and the nonce it carries."""
    nonce = secrets.token_hex(_NONCE_BYTES).encode()
    return b"\0".join((_VERSION, instance.encode(), nonce)), nonce


def final_message(secret: ClusterSecret, instance: str, nonce: bytes, challenge: bytes) -> bytes:
    return secret.mac(_VERSION, instance.encode(), nonce, challenge).hex().encode()


class PeerExchange:
    """The server side of one `KOP-PEER` exchange (a SASL mechanism, as in
    `kop.sasl.mechanisms`). The principal names the instance it proved to be."""

    name = PEER_MECHANISM
    costly = False  # one HMAC

    def __init__(self, secret: ClusterSecret, namespace: Namespace) -> None:
        self._secret = secret
        self._namespace = namespace
        self._first: tuple[bytes, bytes] | None = None  # instance, client nonce
        self._challenge = b""

    def step(self, client: bytes) -> Step:
        if self._first is None:
            parts = client.split(b"\0")
            if len(parts) != 3 or parts[0] != _VERSION:
                raise AuthenticationFailed("KOP-PEER first message is malformed")
            _, instance, nonce = parts
            if not 0 < len(instance) <= MAX_INSTANCE_ID or not 16 <= len(nonce) <= 128:
                raise AuthenticationFailed("KOP-PEER first message is malformed")
            self._first = (instance, nonce)
            self._challenge = secrets.token_hex(_NONCE_BYTES).encode()
            return Step(self._challenge)
        instance, nonce = self._first
        want = self._secret.mac(_VERSION, instance, nonce, self._challenge).hex().encode()
        if not hmac.compare_digest(want, client):
            raise AuthenticationFailed("KOP-PEER proof does not match this cluster's secret")
        name = instance.decode("ascii", "replace")
        principal = Principal(f"kop-instance:{name}", self._namespace, PEER_MECHANISM, None, name)
        return Step(b"", principal)


def is_instance(principal: Principal | None, live: set[str]) -> bool:
    """A connection authenticated as one of the live kop instances."""
    return (
        principal is not None
        and principal.mechanism == PEER_MECHANISM
        and principal.instance in live
    )
