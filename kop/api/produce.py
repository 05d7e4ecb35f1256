"""Produce: validate batches, write them to Pulsar, answer with their offsets.

The ordered part (lookups, validation, sequence checks, enqueueing the Pulsar
sends) runs before the connection reads its next request; waiting for
Pulsar's acknowledgements overlaps with later requests. acks=0 gets no answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from kop.api.context import RequestContext, Response, Services, error_of, existing_topic
from kop.api.internal_topics import refuse_produce
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import split_batches


async def handle(
    services: Services, ctx: RequestContext, request: Any
) -> Awaitable[Response | None]:
    if request.transactional_id is not None:
        return _finish(request, [], error=ErrorCode.transactional_id_authorization_failed)
    if request.acks not in (0, 1, -1):
        return _finish(request, [], error=ErrorCode.invalid_required_acks)
    pending: list[tuple[str, int, Awaitable[int] | BaseException]] = []
    for t in request.topic_data:
        for p in t.partition_data:
            pending.append(
                (t.name, p.index, await _begin(services, ctx, t.name, p.index, p.records))
            )
    return _finish(request, pending)


async def _begin(
    services: Services, ctx: RequestContext, name: str, index: int, records: bytes | None
) -> Awaitable[int] | BaseException:
    try:
        refuse_produce(name)
        view = await existing_topic(services, ctx, name)
        if not 0 <= index < view.partitions:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, f"{name} has no partition {index}"
            )
        if not records:
            raise KafkaError(ErrorCode.corrupt_message, "produce without records")
        batches = split_batches(records, max_batch_bytes=view.max_message_bytes)
        for head, _ in batches:
            if head.is_transactional or head.is_control:
                raise KafkaError(
                    ErrorCode.unsupported_for_message_format,
                    "transactional and control batches are not supported yet",
                )
        await services.catalog.writable(view.topic)
        plog = await services.logs.partition(view.partition_topic(index))
        return await plog.begin_append(batches, view.entry_format, view.pulsar_batching)
    except Exception as exc:
        return exc


async def _finish(
    request: Any,
    pending: list[tuple[str, int, Awaitable[int] | BaseException]],
    error: ErrorCode | None = None,
) -> Response | None:
    # One after another: the writes are in flight already, so this takes as long as the
    # slowest, and no task per partition is made to wait for (with gather, an answer
    # took two more turns of the event loop).
    results = [await _settle(work) for _, _, work in pending]
    if request.acks == 0:
        return None
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (name, index, _), (offset, code, message) in zip(pending, results, strict=True):
        by_topic.setdefault(name, []).append(_partition(index, code, offset, message))
    if error is not None:
        for t in request.topic_data:
            by_topic[t.name] = [
                _partition(p.index, error, -1, error.name) for p in t.partition_data
            ]
    return {
        "responses": [{"name": n, "partition_responses": ps} for n, ps in by_topic.items()],
        "throttle_time": 0,
    }


async def _settle(
    work: Awaitable[int] | BaseException,
) -> tuple[int, ErrorCode, str | None]:
    if isinstance(work, BaseException):
        code, message = error_of(work)
        return -1, code, message
    try:
        # Shielded: the write belongs to the log and completes even if the
        # connection waiting for it goes away.
        return await asyncio.shield(work), ErrorCode.none, None
    except Exception as exc:
        code, message = error_of(exc)
        return -1, code, message


def _partition(index: int, code: ErrorCode, offset: int, message: str | None) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": code,
        "base_offset": offset,
        "log_append_time": -1,
        "log_start_offset": -1,
        "record_errors": (),
        "error_message": message,
    }
