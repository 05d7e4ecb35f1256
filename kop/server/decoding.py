"""A request frame to a request, or to what kop answers instead (sans-IO: no socket,
no loop). Kafka's rules for what cannot be decoded: ApiVersions at a version kop does
not know is answered at v0 with UNSUPPORTED_VERSION (so the client learns the
versions it may use); a malformed request of a known version is answered with
INVALID_REQUEST where its response has a top-level error code; anything else closes
the connection (`Undecodable`)."""

from __future__ import annotations

from typing import Any

from kop.api.api_versions import unsupported_version_response
from kop.protocol.error_replies import top_level_error_response
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import (
    ApiKey,
    MalformedRequest,
    Request,
    RequestHeader,
    UnsupportedVersion,
    decode_request,
    is_supported,
)


class Undecodable(Exception):
    """Neither a request nor anything to answer: the connection is closed."""


def decode(frame: bytes | memoryview) -> Request | tuple[RequestHeader, Any, str | None]:
    """The request; or (header, answer, why) when kop answers without a handler (`why`
    is the malformation to log, None for an unknown ApiVersions). Raises Undecodable."""
    try:
        return decode_request(frame)
    except UnsupportedVersion as exc:
        head = exc.header
        if head.api_key == ApiKey.API_VERSIONS:
            v0 = RequestHeader(head.api_key, 0, head.correlation_id, None)
            return v0, unsupported_version_response(), None
        raise Undecodable(str(exc)) from exc
    except MalformedRequest as exc:
        known = exc.header
        if known is not None and is_supported(known.api_key, known.api_version):
            reply = top_level_error_response(known, ErrorCode.invalid_request)
            if reply is not None:
                return known, reply, str(exc)
        raise Undecodable(f"malformed request: {exc}") from exc
