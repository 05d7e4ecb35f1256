"""The transaction APIs a transactional producer sends its coordinator:
InitProducerId with a transactional id, AddPartitionsToTxn (v0-3 from clients, the
batched and verify-only v4+ of KIP-890 from brokers and tools) and EndTxn.

Transaction version 2 (KIP-890 part 2) is the request's, as in Kafka: EndTxn v5+ and
a broker's AddPartitionsToTxn v4+ that is not verify-only, once the cluster
finalizes version 2 (`tv2`).

A transactional id is its tenant's (kop.groups.scope, as a group id is), and using
one needs the right to produce in the client's namespace: Kafka's WRITE on the
TRANSACTIONAL_ID resource, which kop's Pulsar-permission authorizer maps as it maps
IdempotentWrite (docs/security.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kio.schema.add_partitions_to_txn.v0.response import (
    AddPartitionsToTxnTopicResult as V0TopicResult,
)
from kio.schema.add_partitions_to_txn.v1.response import (
    AddPartitionsToTxnTopicResult as V1TopicResult,
)
from kio.schema.add_partitions_to_txn.v2.response import (
    AddPartitionsToTxnTopicResult as V2TopicResult,
)
from kio.schema.add_partitions_to_txn.v3.response import (
    AddPartitionsToTxnTopicResult as V3TopicResult,
)
from kio.schema.add_partitions_to_txn.v5.request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from kio.schema.add_partitions_to_txn.v5.response import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
)
from kio.schema.end_txn.v5.request import EndTxnRequest
from kio.schema.end_txn.v5.response import EndTxnResponse
from kio.schema.init_producer_id.v5.request import InitProducerIdRequest
from kio.schema.init_producer_id.v5.response import InitProducerIdResponse
from kio.schema.types import ProducerId, TopicName
from kio.static.primitive import i16

from kop.api.context import RequestContext, Services, existing_topic
from kop.api.routes import Now, Route
from kop.groups.scope import ReservedGroupName
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey, response_schema
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import Unrepresentable, downgrade, upgrade
from kop.security.authorizer import TopicOp
from kop.txn.peers import is_peer
from kop.txn.state import Partition
from kop.txn.store import reserved

# KIP-588: versions from which a client knows PRODUCER_FENCED; older ones are told
# INVALID_PRODUCER_EPOCH, as Kafka does.
KNOWS_FENCED = {"InitProducerId": 4, "AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2,
                "EndTxn": 2, "TxnOffsetCommit": 3}  # fmt: skip


def for_version(code: ErrorCode, api: str, version: int) -> ErrorCode:
    if code is ErrorCode.producer_fenced and version < KNOWS_FENCED[api]:
        return ErrorCode.invalid_producer_epoch
    return code


def tv2(services: Services, ctx: RequestContext, first: int) -> bool:
    """Whether the request (of an API whose version 2 begins at `first`) is made
    under transaction version 2."""
    return ctx.api_version >= first and services.txns.version >= 2


async def txn_key(services: Services, ctx: RequestContext, txn_id: str) -> str:
    """The transactional id `txn_id` names for this client, if its principal may use
    it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka, otherwise)."""
    txns = services.txns
    if not await ctx.access.idempotent_write(ctx.namespace):
        raise KafkaError(
            ErrorCode.transactional_id_authorization_failed, f"not authorized for {txn_id}"
        )
    try:
        key = txns.scope.key(ctx.namespace, txn_id)
    except ReservedGroupName as exc:
        raise KafkaError(ErrorCode.invalid_request, str(exc)) from None
    if reserved(key):
        raise KafkaError(ErrorCode.invalid_request, f"transactional id {txn_id!r} is reserved")
    return key


async def coordinated(services: Services, ctx: RequestContext, txn_id: str) -> str:
    """`txn_key`, if this instance coordinates it now (NOT_COORDINATOR or
    COORDINATOR_LOAD_IN_PROGRESS otherwise)."""
    key = await txn_key(services, ctx, txn_id)
    services.txns.check(key)
    return key


async def init_producer_id(
    services: Services, ctx: RequestContext, txn_id: str, request: InitProducerIdRequest
) -> InitProducerIdResponse:
    """InitProducerId with a transactional id (`txn_id`, the request's): a new epoch
    for it, fencing any earlier producer of the id and aborting what it left open
    (KIP-360's id and epoch, when given, must be the current or the one just bumped)."""
    try:
        key = await coordinated(services, ctx, txn_id)
        timeout_ms = int(request.transaction_timeout.total_seconds() * 1000)
        named: tuple[int, int] = (request.producer_id, request.producer_epoch)  # -1s before v3
        expected = named if named[0] >= 0 else None
        code, pid, epoch = await services.txns.coordinator.init_producer_id(
            key, timeout_ms, expected
        )
    except KafkaError as exc:
        code, pid, epoch = exc.code, -1, -1
    return init_answer(for_version(code, "InitProducerId", ctx.api_version), pid, epoch)


def init_answer(code: ErrorCode, pid: int, epoch: int) -> InitProducerIdResponse:
    """An InitProducerId answer, idempotent or transactional (kop.api.producer_ids)."""
    return InitProducerIdResponse(
        throttle_time=NO_THROTTLE,
        error_code=code,
        producer_id=ProducerId(pid),
        producer_epoch=i16(epoch),
    )


# AddPartitionsToTxn v4+ carries many transactions (KIP-890) and a top-level error;
# v0-3 the client's one transaction at the top level (v3_and_below_*).
BATCHED = 4


async def add_partitions(
    services: Services, ctx: RequestContext, request: AddPartitionsToTxnRequest
) -> Now[AddPartitionsToTxnResponse]:
    """v0-3: a client adds partitions to its own transaction (its transactional id's
    permission suffices); v4+: a broker's batch (`_add_batched`)."""
    if ctx.api_version >= BATCHED:
        return Now(await _add_batched(services, ctx, request))
    out = []
    for t in request.transactions:  # the client's one (`_read_added`)
        results = await _add(
            services, ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
            verify_only=False,
        )  # fmt: skip
        out.append(AddPartitionsToTxnResult(transactional_id=t.transactional_id,
                                            topic_results=results))  # fmt: skip
    return Now(_added(ErrorCode.none, tuple(out)))


def _read_added(body: Any, version: int) -> AddPartitionsToTxnRequest:
    """A v0-3 request (one transaction, named at the top level) as the newest shape
    holds it: one transaction, not verify-only. The handler tells a v0-3 client's
    transaction from a broker's batch by the version, as Kafka does."""
    if version >= BATCHED:
        return upgrade(body, AddPartitionsToTxnRequest)
    return AddPartitionsToTxnRequest(
        transactions=(
            AddPartitionsToTxnTransaction(
                transactional_id=body.v3_and_below_transactional_id,
                producer_id=body.v3_and_below_producer_id,
                producer_epoch=body.v3_and_below_producer_epoch,
                verify_only=False,
                topics=tuple(upgrade(t, AddPartitionsToTxnTopic) for t in body.v3_and_below_topics),
            ),
        )
    )


# The v0-3 classes of a topic's results (results_by_topic_v3_and_below holds them).
_V3_TOPIC_RESULTS: dict[int, type[Any]] = {
    0: V0TopicResult, 1: V1TopicResult, 2: V2TopicResult, 3: V3TopicResult,
}  # fmt: skip


def _write_added(answer: AddPartitionsToTxnResponse, version: int) -> Any:
    """The answer at v0-3: the one transaction's topic results at the top level
    (results_by_topic_v3_and_below), the top-level error code dropped (Kafka marks it
    ignorable; a v0-3 answer's errors are its partitions')."""
    api = ApiKey.ADD_PARTITIONS_TO_TXN
    cls = response_schema(api, version)
    if version >= BATCHED:
        return downgrade(answer, cls, api)
    if len(answer.results_by_transaction) > 1:
        raise Unrepresentable(
            f"{len(answer.results_by_transaction)} transactions cannot be sent at version {version}"
        )
    topics = tuple(
        downgrade(t, _V3_TOPIC_RESULTS[version], api)
        for r in answer.results_by_transaction
        for t in r.topic_results
    )
    rest = downgrade(dataclasses.replace(answer, results_by_transaction=()), cls, api)
    return dataclasses.replace(rest, results_by_topic_v3_and_below=topics)


async def _add_batched(
    services: Services, ctx: RequestContext, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    """Kafka takes these from brokers only (ClusterAction); so does kop, from its
    superusers and from the other instances (kop.txn.peers: their verifications)."""
    peer = is_peer(ctx.principal, services.ownership.instances())
    if not peer and not await ctx.access.cluster():
        return _added(ErrorCode.cluster_authorization_failed)
    out = []
    for t in request.transactions:
        if peer:
            results = await _for_peer(services, t)
        else:
            results = await _add(
                services, ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
                verify_only=t.verify_only, version=1 if t.verify_only else 2,
            )  # fmt: skip
        out.append(AddPartitionsToTxnResult(transactional_id=t.transactional_id,
                                            topic_results=results))  # fmt: skip
    return _added(ErrorCode.none, tuple(out))


async def _for_peer(
    services: Services, t: AddPartitionsToTxnTransaction
) -> tuple[AddPartitionsToTxnTopicResult, ...]:
    """Another instance asks whether a write it is given belongs to the producer's
    ongoing transaction (verify-only), or adds the partition of a write to it
    (transaction version 2): the transactional id as kop keys it (its tenant's), the
    partitions as the coordinator records them (partition topic, index). Each gets
    the coordinator's own answer (INVALID_PRODUCER_EPOCH for a fenced producer)."""
    txns = services.txns
    pid, epoch = t.producer_id, t.producer_epoch

    async def verdict(part: Partition) -> ErrorCode:
        try:
            txns.check(t.transactional_id)
        except KafkaError as exc:
            return exc.code
        if t.verify_only:
            return txns.coordinator.verify(t.transactional_id, pid, epoch, part)
        return await txns.coordinator.add_partitions(t.transactional_id, pid, epoch, [part], 2)

    return tuple([
        AddPartitionsToTxnTopicResult(name=topic.name, results_by_partition=tuple([
            AddPartitionsToTxnPartitionResult(
                partition_index=i, partition_error_code=await verdict((topic.name, i)))
            for i in topic.partitions
        ]))
        for topic in t.topics
    ])  # fmt: skip


def _added(
    code: ErrorCode, results: tuple[AddPartitionsToTxnResult, ...] = ()
) -> AddPartitionsToTxnResponse:
    """`results` per transaction (at v0-3 the one, written at the top level:
    `_write_added`), and the top-level error (v4+)."""
    return AddPartitionsToTxnResponse(
        throttle_time=NO_THROTTLE, error_code=code, results_by_transaction=results
    )


async def _add(
    services: Services, ctx: RequestContext, txn_id: str, producer_id: int, epoch: int,
    topics: tuple[AddPartitionsToTxnTopic, ...], *, verify_only: bool, version: int = 1,
) -> tuple[AddPartitionsToTxnTopicResult, ...]:  # fmt: skip
    """Each partition's answer. As Kafka: a partition the client may not write to or
    that does not exist fails on its own, and the others are then not attempted."""
    named: dict[tuple[str, int], Partition] = {}
    failed: dict[tuple[str, int], ErrorCode] = {}
    for t in topics:
        for index in t.partitions:
            try:
                view = await existing_topic(services, ctx, t.name, TopicOp.PRODUCE)
                if not 0 <= index < view.partitions:
                    raise KafkaError(ErrorCode.unknown_topic_or_partition, "no such partition")
                named[(t.name, index)] = (view.partition_topic(index), index)
            except KafkaError as exc:
                failed[(t.name, index)] = exc.code
    code = ErrorCode.operation_not_attempted if failed else ErrorCode.none
    verified: set[tuple[str, int]] = set()
    if not failed:
        try:
            key = await coordinated(services, ctx, txn_id)
            coordinator = services.txns.coordinator
            if verify_only:
                verified = {
                    n for n, p in named.items()
                    if coordinator.verify(key, producer_id, epoch, p) is ErrorCode.none
                }  # fmt: skip
                code = ErrorCode.invalid_txn_state
            else:
                code = await coordinator.add_partitions(
                    key, producer_id, epoch, named.values(), version
                )
        except KafkaError as exc:
            code = exc.code
    code = for_version(code, "AddPartitionsToTxn", ctx.api_version)
    by_topic: dict[TopicName, list[AddPartitionsToTxnPartitionResult]] = {}
    for t in topics:
        for index in t.partitions:
            n = (t.name, index)
            mine = ErrorCode.none if n in verified else failed.get(n, code)
            by_topic.setdefault(t.name, []).append(
                AddPartitionsToTxnPartitionResult(partition_index=index, partition_error_code=mine)
            )
    return tuple(
        AddPartitionsToTxnTopicResult(name=n, results_by_partition=tuple(rs))
        for n, rs in by_topic.items()
    )


async def end_txn(
    services: Services, ctx: RequestContext, request: EndTxnRequest
) -> Now[EndTxnResponse]:
    """EndTxn; under version 2 (v5) the answer names the producer id and epoch the
    producer goes on with, bumped by this end (earlier versions drop them: Kafka
    marks them ignorable)."""
    version = 2 if tv2(services, ctx, first=5) else 1
    try:
        key = await coordinated(services, ctx, request.transactional_id)
        code, pid, epoch = await services.txns.coordinator.end_txn(
            key, request.producer_id, request.producer_epoch, request.committed, version
        )
    except KafkaError as exc:
        code, pid, epoch = exc.code, -1, -1
    return Now(
        EndTxnResponse(
            throttle_time=NO_THROTTLE,
            error_code=for_version(code, "EndTxn", ctx.api_version),
            producer_id=ProducerId(pid),
            producer_epoch=i16(epoch),
        )
    )


ROUTES = (
    Route(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnResponse,
        add_partitions,
        up=_read_added,
        down=_write_added,
    ),
    Route(ApiKey.END_TXN, EndTxnRequest, EndTxnResponse, end_txn),
)
