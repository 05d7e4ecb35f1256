"""SaslHandshake and SaslAuthenticate where no SASL exchange is expected: on a listener
without SASL, or after the exchange (a SASL listener's connection answers them
itself while authenticating). Kafka answers ILLEGAL_SASL_STATE there."""

from __future__ import annotations

from typing import Any

from kop.api.context import RequestContext, Response, Services
from kop.protocol.messages import ApiKey
from kop.security.session import no_exchange


async def handshake(services: Services, ctx: RequestContext, request: Any) -> Response:
    return no_exchange(ApiKey.SASL_HANDSHAKE)


async def authenticate(services: Services, ctx: RequestContext, request: Any) -> Response:
    return no_exchange(ApiKey.SASL_AUTHENTICATE)
