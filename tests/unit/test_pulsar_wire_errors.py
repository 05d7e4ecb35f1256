"""Which broker errors kop's Pulsar client retries (kop/pulsar/wire/errors.py),
code by code against the Java client: `ClientCnx.getPulsarClientException` maps
each ServerError to an exception and `PulsarClientException.isRetriableError`
says which of those are final. A retriable error is retried until the operation
timeout; a final one fails the request at once (Kafka clients then see a
non-retriable error instead of a timeout)."""

from __future__ import annotations

import pytest

from kop.pulsar.wire.errors import server_error
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

# Final in the Java client too (isRetriableError is False for its exception).
JAVA_FINAL = {
    "AuthorizationError",
    "TopicNotFound",
    "SubscriptionNotFound",
    "IncompatibleSchema",
    "ConsumerAssignError",
    "NotAllowedError",
    "TransactionConflict",
}
# Final in kop, where Java maps them to a generic (retriable) exception or ends the
# producer itself: trying the same request again cannot succeed.
KOP_ALSO_FINAL = {
    "ChecksumError",  # as a SEND_ERROR it fails only its entry (see send_queue.reject)
    "UnsupportedVersionError",
    "InvalidTopicName",
    "TopicTerminatedError",  # Java's ProducerImpl ends the producer on it
    "ProducerFenced",  # likewise
    "InvalidTxnStatus",
    "TransactionNotFound",
}
# Retriable in kop although final for the Java client's *first* attempt: kop meets
# them only when re-creating, where the broker may still hold the old producer or
# consumer under the same name (Java retries them then too).
KOP_RETRIES = {"ProducerBusy", "ConsumerBusy"}


@pytest.mark.parametrize("name", pb.ServerError.keys())
def test_each_server_error_is_classified_as_the_java_client_does(name: str) -> None:
    error = server_error(pb.ServerError.Value(name), "from the broker")
    assert error.retriable == (name not in JAVA_FINAL | KOP_ALSO_FINAL), name
    assert error.server_error == pb.ServerError.Value(name)


def test_every_server_error_of_the_protocol_was_decided() -> None:
    """A new code in PulsarApi.proto must be looked at, not defaulted silently."""
    retriable = {
        "UnknownError", "MetadataError", "PersistenceError", "ServiceNotReady",
        "ProducerBlockedQuotaExceededError", "ProducerBlockedQuotaExceededException",
        "ConsumerNotFound", "TooManyRequests", "TransactionCoordinatorNotFound",
        # Credentials are read afresh per connection (a rotated token file, a renewed
        # OAuth2 token), so a second attempt can succeed; preflight names it at start.
        "AuthenticationError",
    }  # fmt: skip
    decided = JAVA_FINAL | KOP_ALSO_FINAL | KOP_RETRIES | retriable
    assert set(pb.ServerError.keys()) == decided


def test_a_code_newer_than_kop_is_retriable_as_in_java() -> None:
    """Java maps an unknown code to a plain PulsarClientException, which
    isRetriableError counts retriable: a newer broker's transient state."""
    error = server_error(99, "something new")  # type: ignore[arg-type]
    assert error.retriable and "99" in str(error)
