"""Which connection and request a log line was written for, kept in context variables
(each connection runs in a task of its own, and asyncio copies the context into the
tasks a request starts): `log_format=json` puts them in every line
(kop.ops.log_format); the plain format leaves them out."""

from __future__ import annotations

from contextvars import ContextVar

# The client's address, "host:port"; "" outside any connection.
PEER: ContextVar[str] = ContextVar("kop_peer", default="")
# The request being handled: (API key, version, correlation id, client id).
REQUEST: ContextVar[tuple[int, int, int, str] | None] = ContextVar("kop_request", default=None)
# Who the connection authenticated as ("" before SASL, or without it).
PRINCIPAL: ContextVar[str] = ContextVar("kop_principal", default="")
