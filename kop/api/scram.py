"""DescribeUserScramCredentials and AlterUserScramCredentials, so that
`kafka-configs --alter --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users`
makes a user that signs in at every instance (kop.sasl.scram_users), with
Kafka's checks and codes. Both are broker-wide operations: superusers only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.schema.alter_user_scram_credentials.v0.response import (
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from kio.schema.describe_user_scram_credentials.v0.request import (
    DescribeUserScramCredentialsRequest,
)
from kio.schema.describe_user_scram_credentials.v0.response import (
    CredentialInfo,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)
from kio.static.primitive import i8, i32

from kop.api.context import RequestContext, Services, error_of
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.sasl.mechanisms import SCRAM_SHA_256, SCRAM_SHA_512
from kop.sasl.scram import MAX_ITERATIONS, MIN_ITERATIONS, from_salted_password
from kop.sasl.scram_users import ScramUsers

MECHANISMS = {1: SCRAM_SHA_256, 2: SCRAM_SHA_512}
CODES = {name: code for code, name in MECHANISMS.items()}

# Kafka's words: one user once per request, whatever the mechanisms (kafka-configs
# with both SCRAM mechanisms in one --add-config is refused too).
TWICE = "A user credential cannot be altered twice in the same request"


async def describe(
    services: Services, ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> Now[DescribeUserScramCredentialsResponse]:
    try:
        users = await _users(services, ctx)
        await users.refresh()
    except Exception as exc:
        code, message = error_of(exc)
        return Now(
            DescribeUserScramCredentialsResponse(
                throttle_time=NO_THROTTLE, error_code=code, error_message=message, results=()
            )
        )
    asked = [u.name for u in request.users] if request.users else None  # none: all
    counts = Counter(asked or ())
    known = users.describe(None if asked is None else list(counts))
    results = []
    for name in asked if asked is not None else sorted(known):
        infos = known.get(name, {})
        status, why = ErrorCode.none, None
        if counts[name] > 1:
            status, why = ErrorCode.duplicate_resource, f"user {name!r} asked more than once"
        elif not infos:
            status, why = ErrorCode.resource_not_found, f"no credential for user {name!r}"
        results.append(
            DescribeUserScramCredentialsResult(
                user=name,
                error_code=status,
                error_message=why,
                credential_infos=tuple(
                    CredentialInfo(mechanism=i8(CODES[m]), iterations=i32(i))
                    for m, i in sorted(infos.items())
                ),
            )
        )
    return Now(
        DescribeUserScramCredentialsResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            results=tuple(results),
        )
    )


async def alter(
    services: Services, ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> Now[AlterUserScramCredentialsResponse]:
    names = [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    try:
        users = await _users(services, ctx)
    except Exception as exc:
        code, message = error_of(exc)
        return Now(_altered((n, code, message) for n in dict.fromkeys(names)))
    twice = {n for n, c in Counter(names).items() if c > 1}
    outcome: dict[str, tuple[ErrorCode, str | None]] = {}
    changes: list[ScramCredentialDeletion | ScramCredentialUpsertion] = [
        *request.deletions,
        *request.upsertions,
    ]
    for change in changes:
        name = change.name
        if name in outcome:
            continue
        try:
            if name in twice:
                raise KafkaError(ErrorCode.duplicate_resource, TWICE)
            await _apply(users, change)
            outcome[name] = (ErrorCode.none, None)
        except Exception as exc:
            outcome[name] = error_of(exc)
    return Now(_altered((n, code, message) for n, (code, message) in outcome.items()))


ROUTES = (
    Route(
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        DescribeUserScramCredentialsRequest,
        DescribeUserScramCredentialsResponse,
        describe,
    ),
    Route(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        AlterUserScramCredentialsRequest,
        AlterUserScramCredentialsResponse,
        alter,
    ),
)


def _altered(
    results: Iterable[tuple[str, ErrorCode, str | None]],
) -> AlterUserScramCredentialsResponse:
    return AlterUserScramCredentialsResponse(
        throttle_time=NO_THROTTLE,
        results=tuple(
            AlterUserScramCredentialsResult(user=n, error_code=code, error_message=message)
            for n, code, message in results
        ),
    )


async def _apply(
    users: ScramUsers, change: ScramCredentialDeletion | ScramCredentialUpsertion
) -> None:
    mechanism = MECHANISMS.get(change.mechanism)
    if mechanism is None:
        raise KafkaError(ErrorCode.unsupported_sasl_mechanism, f"mechanism {change.mechanism}")
    if not change.name:
        raise KafkaError(ErrorCode.unacceptable_credential, "the user name is empty")
    if isinstance(change, ScramCredentialDeletion):
        if not await users.remove(change.name, mechanism):
            raise KafkaError(ErrorCode.resource_not_found, f"{change.name} has no {mechanism}")
        return
    if not MIN_ITERATIONS <= change.iterations <= MAX_ITERATIONS:
        raise KafkaError(
            ErrorCode.unacceptable_credential,
            f"iterations must be {MIN_ITERATIONS} to {MAX_ITERATIONS}",
        )
    if not change.salt or not change.salted_password:
        raise KafkaError(ErrorCode.unacceptable_credential, "salt and salted password are needed")
    cred = from_salted_password(mechanism, change.salted_password, change.salt, change.iterations)
    await users.upsert(change.name, mechanism, cred)


async def _users(services: Services, ctx: RequestContext) -> ScramUsers:
    if not await ctx.access.cluster():
        raise KafkaError(ErrorCode.cluster_authorization_failed, "superusers only")
    return services.scram
