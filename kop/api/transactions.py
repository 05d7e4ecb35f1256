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

from typing import Any

from kop.api.context import RequestContext, Response, Services, existing_topic
from kop.groups.scope import ReservedGroupName
from kop.protocol.errors import ErrorCode, KafkaError
from kop.security.authorizer import TopicOp
from kop.txn.peers import is_peer
from kop.txn.service import TxnService
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
    return ctx.api_version >= first and services.txns is not None and services.txns.version >= 2


def txn_service(services: Services) -> TxnService:
    if services.txns is None:
        raise KafkaError(ErrorCode.coordinator_not_available, "transactions are not served")
    return services.txns


async def txn_key(services: Services, ctx: RequestContext, txn_id: str) -> str:
    """The transactional id `txn_id` names for this client, if its principal may use
    it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka, otherwise)."""
    txns = txn_service(services)
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
    txn_service(services).check(key)
    return key


async def init_producer_id(services: Services, ctx: RequestContext, request: Any) -> Response:
    """InitProducerId with a transactional id: a new epoch for it, fencing any
    earlier producer of the id and aborting what it left open (KIP-360's id and
    epoch, when given, must be the current or the one just bumped)."""
    pid = getattr(request, "producer_id", -1)
    epoch = getattr(request, "producer_epoch", -1)
    try:
        key = await coordinated(services, ctx, request.transactional_id)
        timeout_ms = int(request.transaction_timeout.total_seconds() * 1000)
        expected = (pid, epoch) if pid >= 0 else None
        code, pid, epoch = await txn_service(services).coordinator.init_producer_id(
            key, timeout_ms, expected
        )
    except KafkaError as exc:
        code, pid, epoch = exc.code, -1, -1
    code = for_version(code, "InitProducerId", ctx.api_version)
    return {"throttle_time": 0, "error_code": code, "producer_id": pid, "producer_epoch": epoch}


async def add_partitions(services: Services, ctx: RequestContext, request: Any) -> Response:
    if hasattr(request, "transactions"):  # v4+: many transactions, KIP-890
        return await _add_batched(services, ctx, request)
    results = await _add(
        services, ctx, request.v3_and_below_transactional_id,
        request.v3_and_below_producer_id, request.v3_and_below_producer_epoch,
        request.v3_and_below_topics, verify_only=False,
    )  # fmt: skip
    return _added(ErrorCode.none, v3=results)


async def _add_batched(services: Services, ctx: RequestContext, request: Any) -> Response:
    """Kafka takes these from brokers only (ClusterAction); so does kop, from its
    superusers and from the other instances (kop.txn.peers: their verifications)."""
    peer = is_peer(ctx.principal, services.owners.instances())
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
        out.append({"transactional_id": t.transactional_id, "topic_results": results})
    return _added(ErrorCode.none, batched=out)


async def _for_peer(services: Services, t: Any) -> list[dict[str, Any]]:
    """Another instance asks whether a write it is given belongs to the producer's
    ongoing transaction (verify-only), or adds the partition of a write to it
    (transaction version 2): the transactional id as kop keys it (its tenant's), the
    partitions as the coordinator records them (partition topic, index). Each gets
    the coordinator's own answer (INVALID_PRODUCER_EPOCH for a fenced producer)."""
    txns = txn_service(services)
    pid, epoch = t.producer_id, t.producer_epoch

    async def verdict(part: Partition) -> ErrorCode:
        try:
            txns.check(t.transactional_id)
        except KafkaError as exc:
            return exc.code
        if t.verify_only:
            return txns.coordinator.verify(t.transactional_id, pid, epoch, part)
        return await txns.coordinator.add_partitions(t.transactional_id, pid, epoch, [part], 2)

    return [
        {"name": topic.name, "results_by_partition": [
            {"partition_index": i, "partition_error_code": await verdict((topic.name, i))}
            for i in topic.partitions
        ]}
        for topic in t.topics
    ]  # fmt: skip


def _added(
    code: ErrorCode, v3: list[dict[str, Any]] | None = None,
    batched: list[dict[str, Any]] | None = None,
) -> Response:  # fmt: skip
    """The answer in both shapes (v0-3 results of one transaction; v4+ a top-level
    error and results per transaction): the version's own is what is sent."""
    return {"throttle_time": 0, "error_code": code, "results_by_transaction": batched or [],
            "results_by_topic_v3_and_below": v3 or []}  # fmt: skip


async def _add(
    services: Services, ctx: RequestContext, txn_id: str, producer_id: int, epoch: int,
    topics: Any, *, verify_only: bool, version: int = 1,
) -> list[dict[str, Any]]:  # fmt: skip
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
            coordinator = txn_service(services).coordinator
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
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for t in topics:
        for index in t.partitions:
            n = (t.name, index)
            mine = ErrorCode.none if n in verified else failed.get(n, code)
            by_topic.setdefault(t.name, []).append(
                {"partition_index": index, "partition_error_code": mine}
            )
    return [{"name": n, "results_by_partition": rs} for n, rs in by_topic.items()]


async def end_txn(services: Services, ctx: RequestContext, request: Any) -> Response:
    """EndTxn; under version 2 (v5) the answer names the producer id and epoch the
    producer goes on with, bumped by this end."""
    version = 2 if tv2(services, ctx, first=5) else 1
    try:
        key = await coordinated(services, ctx, request.transactional_id)
        code, pid, epoch = await txn_service(services).coordinator.end_txn(
            key, request.producer_id, request.producer_epoch, request.committed, version
        )
    except KafkaError as exc:
        code, pid, epoch = exc.code, -1, -1
    code = for_version(code, "EndTxn", ctx.api_version)
    return {"throttle_time": 0, "error_code": code, "producer_id": pid, "producer_epoch": epoch}
