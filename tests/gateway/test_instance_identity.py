"""A kop instance's identity is a credential (issue 33, finding 1): requests only kop
instances make of each other are taken from a connection that proved it holds the
cluster secret (the KOP-PEER exchange), never from a client that names itself
`kop-peer-<instance id>`. Before, an anonymous client with that client id aborted
another tenant's transactions and appended markers to any topic."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.add_partitions_to_txn.v4.request import (
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from kio.schema.errors import ErrorCode
from kio.schema.write_txn_markers.v1.request import WritableTxnMarker, WritableTxnMarkerTopic

from conformance.clients.raw import RawClient
from kop.sasl.peers import (
    PEER_MECHANISM,
    ClusterSecret,
    PeerExchange,
    final_message,
    first_message,
    is_instance,
)
from kop.security.errors import AuthenticationFailed
from kop.storage.naming import Namespace
from tests.gateway.memory_gateway import CLUSTER_SECRET
from tests.gateway.test_groups_across_instances import two_instances

NS = Namespace("public", "default")
SECRET = ClusterSecret(b"0123456789abcdef-secret")


def _exchange(secret: ClusterSecret, instance: str = "abc") -> bytes:
    """A whole client side of KOP-PEER against a fresh server exchange; the principal."""
    server = PeerExchange(SECRET, NS)
    first, nonce = first_message(instance)
    challenge = server.step(first).challenge
    step = server.step(final_message(secret, instance, nonce, challenge))
    assert step.principal is not None
    return step.principal.instance.encode()


def test_the_exchange_proves_the_secret_without_sending_it() -> None:
    assert _exchange(SECRET) == b"abc"
    with pytest.raises(AuthenticationFailed):
        _exchange(ClusterSecret(b"another-secret-of-16+bytes"))
    server = PeerExchange(SECRET, NS)
    first, _ = first_message("abc")
    assert SECRET.mac(b"x") not in server.step(first).challenge


def test_a_recorded_proof_does_not_open_another_exchange() -> None:
    first, nonce = first_message("abc")
    once = PeerExchange(SECRET, NS)
    proof = final_message(SECRET, "abc", nonce, once.step(first).challenge)
    again = PeerExchange(SECRET, NS)
    again.step(first)  # a new challenge: the recorded proof answers the old one
    with pytest.raises(AuthenticationFailed):
        again.step(proof)


@pytest.mark.parametrize(
    "first",
    [
        b"",
        b"kop-peer-v1\0abc",
        b"kop-peer-v2\0abc\0" + b"n" * 64,
        b"kop-peer-v1\0\0" + b"n" * 64,
        b"kop-peer-v1\0abc\0short",
    ],
)
def test_a_malformed_first_message_is_refused(first: bytes) -> None:
    with pytest.raises(AuthenticationFailed):
        PeerExchange(SECRET, NS).step(first)


def test_only_a_live_instance_proven_by_the_exchange_counts() -> None:
    principal = PeerExchange(SECRET, NS)
    first, nonce = first_message("abc")
    proven = principal.step(final_message(SECRET, "abc", nonce, principal.step(first).challenge))
    assert is_instance(proven.principal, {"abc"})
    assert not is_instance(proven.principal, {"other"})  # no longer live
    assert not is_instance(None, {"abc"})


def _forge(port: int, instance: str) -> tuple[object, object]:
    """What an anonymous client naming itself after a live instance gets."""
    client = RawClient(port, timeout=10, client_id=f"kop-peer-{instance}")
    try:
        marker = WritableTxnMarker(
            producer_id=7, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
            topics=(WritableTxnMarkerTopic(name="hot", partition_indexes=(0,)),),
        )  # fmt: skip
        markers = client.request(27, 1, markers=(marker,))
        txn = AddPartitionsToTxnTransaction(
            transactional_id="victim", producer_id=7, producer_epoch=0, verify_only=True,
            topics=(AddPartitionsToTxnTopic(name="persistent://public/default/hot-partition-0",
                                            partitions=(0,)),),
        )  # fmt: skip
        verify = client.request(24, 4, transactions=(txn,))
        return markers, verify
    finally:
        client.close()


async def test_a_client_id_naming_a_live_instance_is_no_credential() -> None:
    """With authorization on, an anonymous client (no superuser) named after a live
    instance may neither write markers nor ask the coordinator's verdicts."""
    async with two_instances(authorization_enabled=True, anonymous_role="anon") as (
        owner, other, _backend,
    ):  # fmt: skip
        instance = other.running.membership.me.instance
        markers, verify = await asyncio.to_thread(_forge, owner.kafka_port, instance)
        code = markers.markers[0].topics[0].partitions[0].error_code  # type: ignore[attr-defined]
        assert code == ErrorCode.cluster_authorization_failed
        assert verify.error_code == ErrorCode.cluster_authorization_failed  # type: ignore[attr-defined]


def _peer_login(port: int, secret: ClusterSecret) -> tuple[object, bool]:
    client = RawClient(port, timeout=10)
    try:
        shake = client.request(17, 1, mechanism=PEER_MECHANISM)
        assert shake.error_code == ErrorCode.none
        assert PEER_MECHANISM not in shake.mechanisms  # never told to clients
        first, nonce = first_message("intruder")
        challenge = client.request(36, 2, auth_bytes=first).auth_bytes
        answer = client.request(36, 2, auth_bytes=final_message(secret, "intruder", nonce,
                                                                challenge))  # fmt: skip
        return answer, client.wait_closed_by_peer(5) if answer.error_code else False
    finally:
        client.close()


async def test_a_wrong_secret_is_refused_and_closed_on_a_plaintext_listener() -> None:
    async with two_instances() as (owner, _other, _backend):
        wrong = ClusterSecret(b"not-the-cluster-secret")
        answer, closed = await asyncio.to_thread(_peer_login, owner.kafka_port, wrong)
        assert answer.error_code == ErrorCode.sasl_authentication_failed  # type: ignore[attr-defined]
        assert closed
        right = ClusterSecret(CLUSTER_SECRET.encode())
        answer, _ = await asyncio.to_thread(_peer_login, owner.kafka_port, right)
        assert answer.error_code == ErrorCode.none  # type: ignore[attr-defined]


@given(st.lists(st.binary(max_size=300), min_size=1, max_size=4))
def test_any_bytes_end_the_exchange_with_a_refusal_or_a_challenge(messages: list[bytes]) -> None:
    """A hostile client's bytes never do more than fail the exchange (the fuzzer's
    frames reach the same code over the wire: tests/corpus/seeds/*kop_peer*)."""
    exchange = PeerExchange(SECRET, NS)
    for message in messages:
        try:
            step = exchange.step(message)
        except AuthenticationFailed:
            return
        assert step.principal is None  # no proof of the secret: never a principal
