"""SaslHandshake and SaslAuthenticate where no SASL exchange is expected: on a listener
without SASL, or after the exchange (a SASL listener's connection answers them
itself while authenticating). Kafka answers ILLEGAL_SASL_STATE there."""

from __future__ import annotations

from typing import Any

from kop.api.context import RequestContext, Response, Services
from kop.protocol.errors import ErrorCode


async def handshake(services: Services, ctx: RequestContext, request: Any) -> Response:
    return {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []}


async def authenticate(services: Services, ctx: RequestContext, request: Any) -> Response:
    return {
        "error_code": ErrorCode.illegal_sasl_state,
        "error_message": "no SASL exchange on this connection",
        "auth_bytes": b"",
        "session_lifetime": 0,
    }
