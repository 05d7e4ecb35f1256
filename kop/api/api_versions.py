"""ApiVersions: advertise exactly the keys and versions kop implements."""

from __future__ import annotations

from typing import Any

from kop.api.context import RequestContext, Response, Services
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import SUPPORTED_VERSIONS


def api_keys() -> list[dict[str, int]]:
    return [
        {"api_key": int(k), "min_version": low, "max_version": high}
        for k, (low, high) in sorted(SUPPORTED_VERSIONS.items())
    ]


async def handle(services: Services, ctx: RequestContext, request: Any) -> Response:
    return {"error_code": ErrorCode.none, "api_keys": api_keys(), "throttle_time": 0}


def unsupported_version_response() -> Response:
    """What Kafka answers to a too-new ApiVersions: a v0 body with the error and
    the supported ranges, so the client can retry with a version both know."""
    return {"error_code": ErrorCode.unsupported_version, "api_keys": api_keys(), "throttle_time": 0}
