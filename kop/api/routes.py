"""The handler seam: one typed route per API.

A route names the request class its handler reads and the response class it answers
with, both the newest version kop serves, and the handler itself; the type checker holds
the three together. A handler says which of two phases its answer belongs to:

- `Now(answer)`: answered from the connection's ordered part (most APIs);
- `Later(answer)`: the ordered part is done (a produce's appends are queued in request
  order, a fetch has chosen its partitions), and the answer comes when the awaitable
  resolves, while the connection reads its next requests. It resolves to None when the
  request takes no answer (Produce with acks=0).

The route converts at both ends: the request of whatever version the client sent is
up-converted to the handler's class, the answer down-converted to the negotiated version
(kop/protocol/versions.py). Where Kafka reshaped a message between versions, the route
carries a converter of its own for that part (`up` for the request, `down` for the answer).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

from kop.api.context import RequestContext, Services
from kop.protocol.messages import ApiKey, response_schema
from kop.protocol.versions import downgrade, upgrade

Req = TypeVar("Req")
Resp = TypeVar("Resp")


@dataclass(frozen=True, slots=True)
class Now(Generic[Resp]):
    """An answer made in the connection's ordered part."""

    answer: Resp


@dataclass(frozen=True, slots=True)
class Later(Generic[Resp]):
    """An answer that resolves after the ordered part, in request order (None: the
    request takes no answer)."""

    answer: Awaitable[Resp | None]


Outcome: TypeAlias = Now[Resp] | Later[Resp]


@dataclass(frozen=True, slots=True)
class Writing:
    """A `Later` answer on its way to the wire: the handler's own awaitable (so a
    connection that goes away closes or abandons exactly what the handler made), and how
    its answer is written at the client's version."""

    answer: Awaitable[Any]
    write: Callable[[Any], Any]


# An answer at the client's version (a kio entity of that version), in its phase.
Written: TypeAlias = Now[Any] | Writing
Handler: TypeAlias = Callable[[Services, RequestContext, Req], Awaitable[Outcome[Resp]]]
# How a request of an older version becomes the handler's (default: field by field),
# and how the handler's answer becomes the negotiated version's (default: likewise).
Up: TypeAlias = Callable[[Any, int], Req]
Down: TypeAlias = Callable[[Resp, int], Any]


@dataclass(frozen=True, slots=True)
class Route(Generic[Req, Resp]):
    api: ApiKey
    request: type[Req]
    response: type[Resp]
    handle: Handler[Req, Resp]
    up: Up[Req] | None = None
    down: Down[Resp] | None = None

    def read(self, body: Any, version: int) -> Req:
        """The request as the handler reads it."""
        return self.up(body, version) if self.up is not None else upgrade(body, self.request)

    def write(self, answer: Resp, version: int) -> Any:
        """The answer as the negotiated version carries it."""
        if self.down is not None:
            return self.down(answer, version)
        return downgrade(answer, response_schema(self.api, version), self.api)

    async def run(self, services: Services, ctx: RequestContext, body: Any) -> Written:
        """Read, handle, and write the answer at the client's version, in its phase: what
        the server queues in request order."""
        outcome = await self.handle(services, ctx, self.read(body, ctx.api_version))
        version = ctx.api_version
        if isinstance(outcome, Now):
            return Now(self.write(outcome.answer, version))
        return Writing(outcome.answer, lambda answer: self.write(answer, version))
