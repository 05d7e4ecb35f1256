"""ApiVersions: advertise the keys and versions kop implements (and Produce from
v0, as Kafka 4.x does: see `ADVERTISED_VERSIONS`), and the one feature a client acts
on: `transaction.version`, finalized at the configured level (2: KIP-890 part 2,
Produce and TxnOffsetCommit add partitions implicitly and every end bumps the epoch).
Clients ignore finalized features whose epoch is -1 (Kafka's default when nothing is
finalized), so the epoch is 0: kop's features never change while it runs."""

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


TRANSACTION_VERSION = "transaction.version"
SUPPORTED_TRANSACTION_VERSIONS = (0, 2)
FEATURES_EPOCH = 0


def features(services: Services) -> dict[str, Any]:
    """ApiVersions v3+'s feature fields (nothing while this kop serves no transactions)."""
    if services.txns is None:
        return {}
    low, high = SUPPORTED_TRANSACTION_VERSIONS
    level = services.txns.version
    return {
        "supported_features": [
            {"name": TRANSACTION_VERSION, "min_version": low, "max_version": high}
        ],
        "finalized_features_epoch": FEATURES_EPOCH,
        "finalized_features": [
            {"name": TRANSACTION_VERSION, "max_version_level": level, "min_version_level": level}
        ],
    }


async def handle(services: Services, ctx: RequestContext, request: Any) -> Response:
    return {
        "error_code": ErrorCode.none, "api_keys": api_keys(), "throttle_time": 0,
        **features(services),
    }  # fmt: skip


def unsupported_version_response() -> Response:
    """What Kafka answers to a too-new ApiVersions (KIP-511): a v0 body with the
    error and ApiVersions' own range alone, so the client retries with a version
    both know and then learns the rest."""
    own = [k for k in api_keys() if k["api_key"] == ApiKey.API_VERSIONS]
    return {"error_code": ErrorCode.unsupported_version, "api_keys": own, "throttle_time": 0}
