"""ApiVersions: advertise the keys and versions kop implements (and Produce from
v0, as Kafka 4.x does: see `ADVERTISED_VERSIONS`), and the one feature a client acts
on: `transaction.version`, finalized at the configured level (2: KIP-890 part 2,
Produce and TxnOffsetCommit add partitions implicitly and every end bumps the epoch).
Clients ignore finalized features whose epoch is -1 (Kafka's default when nothing is
finalized), so the epoch is 0: kop's features never change while it runs."""

from __future__ import annotations

import functools
from typing import Any

from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v4.request import ApiVersionsRequest
from kio.schema.api_versions.v4.response import (
    ApiVersion,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)
from kio.static.primitive import i16, i64

from kop.api.context import RequestContext, Services
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ADVERTISED_VERSIONS, ApiKey, response_schema
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import downgrade


def api_keys() -> tuple[ApiVersion, ...]:
    return tuple(
        ApiVersion(api_key=i16(int(k)), min_version=i16(low), max_version=i16(high))
        for k, (low, high) in sorted(ADVERTISED_VERSIONS.items())
    )


TRANSACTION_VERSION = "transaction.version"
SUPPORTED_TRANSACTION_VERSIONS = (0, 2)
FEATURES_EPOCH = 0


async def handle(
    services: Services, ctx: RequestContext, request: ApiVersionsRequest
) -> Now[ApiVersionsResponse]:
    """ApiVersions v3+ names the transaction versions kop serves and the one its
    transaction coordinator runs at (KIP-890); older versions drop the feature fields
    (Kafka marks them ignorable)."""
    return Now(_answer(services.txns.version))


@functools.cache
def _answer(level: int) -> ApiVersionsResponse:
    """The answer at a transaction version level: made once, as it never changes
    while kop runs. Every connection asks first (about 70 keys: made and converted
    anew, 0.3 ms of CPU each time), so a storm of new connections costs less."""
    low, high = SUPPORTED_TRANSACTION_VERSIONS
    return ApiVersionsResponse(
        error_code=ErrorCode.none,
        api_keys=api_keys(),
        throttle_time=NO_THROTTLE,
        supported_features=(
            SupportedFeatureKey(
                name=TRANSACTION_VERSION, min_version=i16(low), max_version=i16(high)
            ),
        ),
        finalized_features_epoch=i64(FEATURES_EPOCH),
        finalized_features=(
            FinalizedFeatureKey(
                name=TRANSACTION_VERSION, max_version_level=i16(level), min_version_level=i16(level)
            ),
        ),
    )


def _down(answer: ApiVersionsResponse, version: int) -> Any:
    """The answer at the client's version, converted once per version (answers come
    from `_answer`: a few objects, kept for the process's life)."""
    key = (id(answer), version)
    hit = _DOWN.get(key)
    if hit is not None and hit[0] is answer:
        return hit[1]
    converted = downgrade(
        answer, response_schema(ApiKey.API_VERSIONS, version), ApiKey.API_VERSIONS
    )
    if len(_DOWN) < _DOWN_MAX:
        _DOWN[key] = (answer, converted)
    return converted


_DOWN: dict[tuple[int, int], tuple[ApiVersionsResponse, Any]] = {}
_DOWN_MAX = 64


ROUTES = (Route(ApiKey.API_VERSIONS, ApiVersionsRequest, ApiVersionsResponse, handle, down=_down),)


def unsupported_version_response() -> ApiVersionsResponseV0:
    """What Kafka answers to a too-new ApiVersions (KIP-511): a v0 body with the
    error and ApiVersions' own range alone, so the client retries with a version
    both know and then learns the rest. The server sends it without a route (the
    request never decoded), so it is made in v0's class itself."""
    low, high = ADVERTISED_VERSIONS[ApiKey.API_VERSIONS]
    own = ApiVersionV0(
        api_key=i16(int(ApiKey.API_VERSIONS)), min_version=i16(low), max_version=i16(high)
    )
    return ApiVersionsResponseV0(error_code=ErrorCode.unsupported_version, api_keys=(own,))
