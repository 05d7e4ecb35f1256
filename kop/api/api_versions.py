"""ApiVersions: advertise the keys and versions kop implements (and Produce from
v0, as Kafka 4.x does: see `ADVERTISED_VERSIONS`)."""

from __future__ import annotations

from typing import Any

from kop.api.context import RequestContext, Response, Services
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ADVERTISED_VERSIONS, ApiKey


def api_keys() -> list[dict[str, int]]:
    return [
        {"api_key": int(k), "min_version": low, "max_version": high}
        for k, (low, high) in sorted(ADVERTISED_VERSIONS.items())
    ]


async def handle(services: Services, ctx: RequestContext, request: Any) -> Response:
    return {"error_code": ErrorCode.none, "api_keys": api_keys(), "throttle_time": 0}


def unsupported_version_response() -> Response:
    """What Kafka answers to a too-new ApiVersions (KIP-511): a v0 body with the
    error and ApiVersions' own range alone, so the client retries with a version
    both know and then learns the rest."""
    own = [k for k in api_keys() if k["api_key"] == ApiKey.API_VERSIONS]
    return {"error_code": ErrorCode.unsupported_version, "api_keys": own, "throttle_time": 0}
