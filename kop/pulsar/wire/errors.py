"""One exception type for everything the wire client raises, with the one fact a
caller acts on: whether trying again can succeed."""

from __future__ import annotations

from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

# Errors after which the same request can never succeed; every other ServerError is
# a broker's transient state (a topic being loaded or unloaded, a lost bookie, a
# producer or consumer of ours the broker has not yet noticed is gone). Checked code
# by code against the Java client (ClientCnx.getPulsarClientException and
# PulsarClientException.isRetriableError) in tests/unit/test_pulsar_wire_errors.py:
# an unknown code is retriable there too, and kop adds the codes whose request
# cannot succeed on a second try (see the test for each). AuthenticationError is
# retried, as in Java: credentials are read afresh for each connection (a rotated
# token file, a renewed OAuth2 token); at start, kop's preflight names it at once.
_FINAL_SERVER_ERRORS = frozenset(
    {
        pb.AuthorizationError,
        pb.ChecksumError,
        pb.UnsupportedVersionError,
        pb.TopicNotFound,
        pb.SubscriptionNotFound,
        pb.TopicTerminatedError,
        pb.InvalidTopicName,
        pb.IncompatibleSchema,
        pb.ConsumerAssignError,
        pb.NotAllowedError,
        pb.ProducerFenced,
        pb.InvalidTxnStatus,
        pb.TransactionConflict,
        pb.TransactionNotFound,
    }
)


class PulsarWireError(Exception):
    """A failed Pulsar operation. `retriable` says whether repeating it can succeed;
    `server_error` is the broker's ServerError code when the broker said no."""

    def __init__(
        self, message: str, retriable: bool, server_error: pb.ServerError | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retriable = retriable
        self.server_error = server_error

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, retriable={self.retriable})"


class ConnectionClosedError(PulsarWireError):
    """The connection to a broker ended (or never started); always retriable."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=True)


class OperationTimeoutError(PulsarWireError):
    """No answer within the operation (or send) timeout; retriable."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=True)


class TlsError(PulsarWireError):
    """The TLS handshake failed (an untrusted certificate, a hostname that does not
    match, TLS spoken to a plaintext port): the same attempt fails again."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=False)


class ProtocolError(PulsarWireError):
    """The peer broke the protocol (a bad frame, a corrupt entry, a receipt out of
    order). The connection or producer that saw it starts over; retriable."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=True)


class ProducerFencedError(PulsarWireError):
    """Another producer holds the topic for good (the Java client's
    ProducerFencedException, state Fenced): a fencing producer took it, the topic's
    epoch moved past ours, or an exclusive producer holds it. Never retriable: the
    producer fails every pending and later send with it and never attaches again."""

    def __init__(self, message: str, server_error: pb.ServerError = pb.ProducerFenced) -> None:
        super().__init__(message, retriable=False, server_error=server_error)


class ProducerBusyError(PulsarWireError):
    """A producer refused at creation because the topic is held (an exclusive
    producer, or producers beside which an exclusive one cannot be): final, as
    the Java client fails a creation on ProducerBusy or ProducerFenced."""

    def __init__(self, message: str, server_error: pb.ServerError) -> None:
        super().__init__(message, retriable=False, server_error=server_error)


class CorruptEntryError(PulsarWireError):
    """An entry whose checksum, size or compression does not add up. Never accepted:
    reading it again gives the same bytes, so it is not retriable."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=False)


def server_error(code: pb.ServerError, message: str) -> PulsarWireError:
    """The exception for a broker's ServerError (in ERROR, SEND_ERROR or a failed lookup)."""
    name = pb.ServerError.Name(code) if code in pb.ServerError.values() else str(code)
    if code == pb.ProducerFenced:
        return ProducerFencedError(f"{name}: {message}")
    return PulsarWireError(
        f"{name}: {message}", retriable=code not in _FINAL_SERVER_ERRORS, server_error=code
    )
