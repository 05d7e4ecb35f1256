"""The offsets half of a transaction: AddOffsetsToTxn (the group's offsets partition
joins the transaction, so its end reaches the group coordinator) and
TxnOffsetCommit (offsets kept aside until then: kop.groups.txn_offsets). Under
transaction version 2, TxnOffsetCommit v5 adds the offsets partition itself."""

from __future__ import annotations

from kio.schema.add_offsets_to_txn.v4.request import AddOffsetsToTxnRequest
from kio.schema.add_offsets_to_txn.v4.response import AddOffsetsToTxnResponse
from kio.schema.txn_offset_commit.v5.request import TxnOffsetCommitRequest
from kio.schema.txn_offset_commit.v5.response import (
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from kio.schema.types import TopicName
from kio.static.primitive import i32

from kop.api.context import RequestContext, Services
from kop.api.groups import group_key
from kop.api.offsets import requested_offsets
from kop.api.routes import Now, Route
from kop.api.transactions import coordinated, for_version, tv2, txn_key
from kop.groups.types import CommittedOffset, TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE


async def add_offsets(
    services: Services, ctx: RequestContext, request: AddOffsetsToTxnRequest
) -> Now[AddOffsetsToTxnResponse]:
    try:
        key = await coordinated(services, ctx, request.transactional_id)
        groups = services.groups
        partition = groups.partition_of(await group_key(services, ctx, request.group_id))
        code = await services.txns.coordinator.add_partitions(
            key, request.producer_id, request.producer_epoch,
            [(groups.partition_topic(partition), partition)],
        )  # fmt: skip
    except KafkaError as exc:
        code = exc.code
    return Now(
        AddOffsetsToTxnResponse(
            throttle_time=NO_THROTTLE,
            error_code=for_version(code, "AddOffsetsToTxn", ctx.api_version),
        )
    )


async def txn_offset_commit(
    services: Services, ctx: RequestContext, request: TxnOffsetCommitRequest
) -> Now[TxnOffsetCommitResponse]:
    codes: dict[TopicPartition, ErrorCode] = {}
    offsets: dict[TopicPartition, CommittedOffset] = {}
    try:
        txn = await txn_key(services, ctx, request.transactional_id)
        key = await group_key(services, ctx, request.group_id)
        producer = (request.producer_id, request.producer_epoch)
        await _verify(services, txn, key, producer, tv2(services, ctx, first=5))
    except KafkaError as exc:
        code = for_version(exc.code, "TxnOffsetCommit", ctx.api_version)
        every = [
            TopicPartition(t.name, p.partition_index) for t in request.topics for p in t.partitions
        ]
        return Now(_answer(dict.fromkeys(every, code)))  # refused as a whole
    await requested_offsets(services, ctx, request.topics, request.group_id, codes, offsets)
    try:
        # generation -1, member "" and no instance id before v3: a commit outside the group
        code = await services.groups.commits.commit(
            key, request.generation_id, request.member_id, request.group_instance_id, offsets,
            producer=producer,
        )  # fmt: skip
    except KafkaError as exc:
        code = exc.code
    code = for_version(code, "TxnOffsetCommit", ctx.api_version)
    codes.update({tp: code for tp in offsets})
    return Now(_answer(codes))


def _answer(codes: dict[TopicPartition, ErrorCode]) -> TxnOffsetCommitResponse:
    """Each partition's code, by topic in the order the topics first come."""
    topics: dict[str, list[TxnOffsetCommitResponsePartition]] = {}
    for tp, code in codes.items():
        topics.setdefault(tp.topic, []).append(
            TxnOffsetCommitResponsePartition(partition_index=i32(tp.partition), error_code=code)
        )
    return TxnOffsetCommitResponse(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            TxnOffsetCommitResponseTopic(name=TopicName(name), partitions=tuple(parts))
            for name, parts in topics.items()
        ),
    )


ROUTES = (
    Route(ApiKey.ADD_OFFSETS_TO_TXN, AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, add_offsets),
    Route(
        ApiKey.TXN_OFFSET_COMMIT, TxnOffsetCommitRequest, TxnOffsetCommitResponse, txn_offset_commit
    ),
)


async def _verify(
    services: Services, txn: str, group: str, producer: tuple[int, int], v2: bool
) -> None:
    """The producer's ongoing transaction holds the group's offsets partition
    (AddOffsetsToTxn; under version 2, `v2`, it is added now), as Kafka verifies it:
    offsets of a transaction already ended (its producer fenced, or aborted by
    recovery after a restart) would otherwise stay pending for good, and the group's
    read_committed consumers get UNSTABLE_OFFSET_COMMIT forever. The end of the
    producer's previous transaction still being completed is a retriable
    COORDINATOR_LOAD_IN_PROGRESS; a fenced producer, INVALID_PRODUCER_EPOCH."""
    groups = services.groups
    partition = groups.partition_of(group)
    part = (groups.partition_topic(partition), partition)
    code = await services.txns.admit(txn, *producer, part, add=v2)
    if code is ErrorCode.concurrent_transactions:
        code = ErrorCode.coordinator_load_in_progress
    elif code is ErrorCode.producer_fenced:
        code = ErrorCode.invalid_producer_epoch
    if code is not ErrorCode.none:
        raise KafkaError(code, "not in an ongoing transaction of this producer")
