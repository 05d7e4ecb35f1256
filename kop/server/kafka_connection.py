"""What a connection's next request frame means: the connection's behaviour as a pure
state machine, in h11's shape (no socket, no event loop, no clock).

`KafkaConnection.receive(frame)` decodes a frame and answers with one event, chosen by a
table of (phase, kind of request):

- `Handle(request)`: run the API's handler (kop/api/dispatch.py);
- `Authenticate(request)`: the SASL exchange answers it (the listener's gate); what the
  exchange answered is fed back with `authenticated(answer)`;
- `Reply(header, body, malformed)`: answered without a handler (a too-new ApiVersions,
  a malformed request whose response has a top-level error code);
- `Close(reason, why)`: the connection ends; what is in flight is still answered.

The phase is the SASL state of the listener's gate: AUTHENTICATING until a SASL
listener's client signed in (Kafka's SaslServerAuthenticator: only ApiVersions and the
SASL requests pass), OPEN after it and on every other listener, CLOSING once an answer
was the last thing the connection may send (a refused exchange). The asyncio side
(`connection.py`) only moves frames and answers and applies budgets and deadlines.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kop.protocol.messages import ApiKey, Request, RequestHeader
from kop.sasl.session import Answer
from kop.server.closing import BAD_REQUEST, UNAUTHENTICATED
from kop.server.decoding import Undecodable, decode


class Phase(enum.Enum):
    AUTHENTICATING = "authenticating"
    OPEN = "open"
    CLOSING = "closing"


class Kind(enum.Enum):
    SASL = "sasl"  # SaslHandshake, SaslAuthenticate
    VERSIONS = "versions"  # ApiVersions: answered before authentication too
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Handle:
    request: Request


@dataclass(frozen=True, slots=True)
class Authenticate:
    request: Request


@dataclass(frozen=True, slots=True)
class Reply:
    header: RequestHeader
    body: Any
    malformed: str | None  # what to log (None: nothing wrong, e.g. a too-new ApiVersions)


@dataclass(frozen=True, slots=True)
class Close:
    reason: str  # kop.server.closing's name for it (counted by the observer)
    why: str  # for kop's log
    header: RequestHeader | None = None  # the request that ended it, when it decoded


Event = Handle | Authenticate | Reply | Close
_Action = Callable[[Request], Event]


def _refuse(request: Request) -> Close:
    key = request.header.api_key
    return Close(UNAUTHENTICATED, f"api {key} before SASL authentication", request.header)


# Kafka's rules for a request by the connection's phase and the request's kind.
TABLE: dict[tuple[Phase, Kind], _Action] = {
    (Phase.AUTHENTICATING, Kind.SASL): Authenticate,
    (Phase.AUTHENTICATING, Kind.VERSIONS): Handle,
    (Phase.AUTHENTICATING, Kind.OTHER): _refuse,
    (Phase.OPEN, Kind.SASL): Authenticate,  # re-authentication, or ILLEGAL_SASL_STATE
    (Phase.OPEN, Kind.VERSIONS): Handle,
    (Phase.OPEN, Kind.OTHER): Handle,
}

_KINDS = {ApiKey.SASL_HANDSHAKE: Kind.SASL, ApiKey.SASL_AUTHENTICATE: Kind.SASL,
          ApiKey.API_VERSIONS: Kind.VERSIONS}  # fmt: skip


class KafkaConnection:
    """One connection's protocol state. `authenticating` is the gate's: whether the
    listener still waits for its client to sign in."""

    def __init__(self, authenticating: Callable[[], bool]) -> None:
        self._authenticating = authenticating
        self._closing: str | None = None  # why, once an answer was the last

    @property
    def phase(self) -> Phase:
        if self._closing is not None:
            return Phase.CLOSING
        return Phase.AUTHENTICATING if self._authenticating() else Phase.OPEN

    @property
    def ending(self) -> Close | None:
        """Set once an answer was the connection's last: no frame is read after it."""
        return None if self._closing is None else Close(UNAUTHENTICATED, self._closing)

    def receive(self, frame: bytes | memoryview) -> Event:
        """The event for the connection's next request frame."""
        if (ending := self.ending) is not None:
            return ending
        try:
            request = decode(frame)
        except Undecodable as exc:
            return Close(BAD_REQUEST, str(exc))
        if isinstance(request, tuple):
            header, body, malformed = request
            return Reply(header, body, malformed)
        kind = _KINDS.get(request.header.api_key, Kind.OTHER)  # type: ignore[call-overload]
        return TABLE[(self.phase, kind)](request)

    def authenticated(self, answer: Answer) -> Close | None:
        """What the SASL exchange answered: a refusal is the connection's last answer
        (Close, to act on once it is queued); else None."""
        if answer.close:
            self._closing = f"SASL refused: {answer.reason}"
            return Close(UNAUTHENTICATED, self._closing)
        return None
