"""The offsets half of a transaction: AddOffsetsToTxn (the group's offsets partition
joins the transaction, so its end reaches the group coordinator) and
TxnOffsetCommit (offsets kept aside until then: kop.groups.txn_offsets)."""

from __future__ import annotations

from typing import Any

from kop.api.context import RequestContext, Response, Services
from kop.api.groups import group_key, group_service
from kop.api.offsets import codes_by_topic, refused_all, requested_offsets
from kop.api.transactions import coordinated, for_version, txn_key, txn_service
from kop.groups.types import CommittedOffset, TopicPartition
from kop.protocol.errors import ErrorCode, KafkaError


async def add_offsets(services: Services, ctx: RequestContext, request: Any) -> Response:
    try:
        key = await coordinated(services, ctx, request.transactional_id)
        groups = group_service(services)
        partition = groups.partition_of(await group_key(services, ctx, request.group_id))
        code = await txn_service(services).coordinator.add_partitions(
            key, request.producer_id, request.producer_epoch,
            [(groups.partition_topic(partition), partition)],
        )  # fmt: skip
    except KafkaError as exc:
        code = exc.code
    return {"throttle_time": 0, "error_code": for_version(code, "AddOffsetsToTxn", ctx.api_version)}


async def txn_offset_commit(services: Services, ctx: RequestContext, request: Any) -> Response:
    codes: dict[TopicPartition, ErrorCode] = {}
    offsets: dict[TopicPartition, CommittedOffset] = {}
    try:
        txn = await txn_key(services, ctx, request.transactional_id)
        key = await group_key(services, ctx, request.group_id)
        await _verify(services, txn, key, request.producer_id, request.producer_epoch)
    except KafkaError as exc:
        return refused_all(request, for_version(exc.code, "TxnOffsetCommit", ctx.api_version))
    await requested_offsets(services, ctx, request.topics, request.group_id, codes, offsets)
    try:
        code = await group_service(services).commit(
            key, getattr(request, "generation_id", -1), getattr(request, "member_id", ""),
            getattr(request, "group_instance_id", None), offsets,
            producer=(request.producer_id, request.producer_epoch),
        )  # fmt: skip
    except KafkaError as exc:
        code = exc.code
    code = for_version(code, "TxnOffsetCommit", ctx.api_version)
    codes.update({tp: code for tp in offsets})
    return {"throttle_time": 0, "topics": codes_by_topic(codes)}


async def _verify(services: Services, txn: str, group: str, producer_id: int, epoch: int) -> None:
    """The producer's ongoing transaction holds the group's offsets partition
    (AddOffsetsToTxn), as Kafka verifies it: offsets of a transaction already ended
    (its producer fenced, or aborted by recovery after a restart) would otherwise
    stay pending for good, and the group's read_committed consumers get
    UNSTABLE_OFFSET_COMMIT forever."""
    groups = group_service(services)
    partition = groups.partition_of(group)
    part = (groups.partition_topic(partition), partition)
    code = await txn_service(services).verify(txn, producer_id, epoch, part)
    if code is not ErrorCode.none:
        raise KafkaError(code, "not in an ongoing transaction of this producer")
