"""What `kafka-transactions` asks: ListTransactions and DescribeTransactions of the
coordinator, DescribeProducers of a partition's leader, and WriteTxnMarkers, with
which `kafka-transactions abort` closes a hanging transaction (one its coordinator
no longer knows) at a partition, as Kafka's brokers write a coordinator's markers."""

from __future__ import annotations

import datetime
import re
import time
from typing import Any

from kop.api.context import (
    RequestContext,
    Response,
    Services,
    error_of,
    lead,
    topic_for,
    topic_partition,
)
from kop.api.patterns import compile_client_pattern
from kop.api.transactions import txn_key, txn_service
from kop.entries.formats import EntryFormat
from kop.protocol.control import Marker, marker_batch
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import read_header
from kop.security.authorizer import TopicOp
from kop.txn.peers import is_peer
from kop.txn.state import State

_STATES = {s.value for s in State}


def _ms_time(ms: int) -> datetime.datetime:
    """A Kafka timestamp as kio writes it (-1, "none", is 1 ms before the epoch)."""
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


async def list_transactions(services: Services, ctx: RequestContext, request: Any) -> Response:
    """The transactions this instance coordinates, of the client's namespace, if it
    may use transactional ids there (Kafka leaves out what it may not describe).
    A `transactional_id_pattern` (v2, KIP-1152) must match a whole id, as Kafka's
    RE2/J `matches()`; null or empty filters nothing; one RE2 refuses, or longer than
    MAX_PATTERN_CHARS, is INVALID_REGULAR_EXPRESSION with nothing listed (Kafka's
    error answer), whether or not the client may see any id."""
    wanted = set(request.state_filters)
    pids = set(request.producer_id_filters)
    duration = getattr(request, "duration_filter", -1)
    pattern_text = getattr(request, "transactional_id_pattern", None)
    out: dict[str, Any] = {"throttle_time": 0, "error_code": ErrorCode.none,
                           "unknown_state_filters": sorted(wanted - _STATES),
                           "transaction_states": []}  # fmt: skip
    try:
        txns = txn_service(services)
    except KafkaError as exc:
        return {**out, "error_code": exc.code}
    allowed = await ctx.access.idempotent_write(ctx.namespace)  # may use transactional ids
    if not txns.partitions.all_loaded:
        return {**out, "error_code": ErrorCode.coordinator_load_in_progress}
    # Compiled after the last await: one compiled pattern at a time, for this loop only.
    pattern = None
    if pattern_text:
        try:
            pattern = compile_client_pattern(pattern_text, "transactional_id_pattern")
        except KafkaError as exc:
            return {**out, "error_code": exc.code, "unknown_state_filters": []}
    if not allowed:
        return out
    now = txns.coordinator.now_ms()
    for meta in sorted(txns.coordinator.metas(), key=lambda m: m.txn_id):
        ns, txn_id = txns.scope.split(meta.txn_id)
        if ns != ctx.namespace or (wanted and meta.state.value not in wanted):
            continue
        if (pids and meta.producer_id not in pids) or (
            duration >= 0 and (meta.started_ms < 0 or now - meta.started_ms < duration)
        ):
            continue
        if pattern is not None and not pattern.fullmatch(txn_id):
            continue
        out["transaction_states"].append({"transactional_id": txn_id,
                                          "producer_id": meta.producer_id,
                                          "transaction_state": meta.state.value})  # fmt: skip
    return out


async def describe_transactions(services: Services, ctx: RequestContext, request: Any) -> Response:
    return {"throttle_time": 0,
            "transaction_states": [await _describe(services, ctx, t)
                                   for t in request.transactional_ids]}  # fmt: skip


async def _describe(services: Services, ctx: RequestContext, txn_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "error_code": ErrorCode.none, "transactional_id": txn_id, "transaction_state": "",
        "transaction_timeout": datetime.timedelta(0), "transaction_start_time": _ms_time(-1),
        "producer_id": -1, "producer_epoch": -1, "topics": [],
    }  # fmt: skip
    try:
        key = await txn_key(services, ctx, txn_id)
        txns = txn_service(services)
        txns.check(key)
    except KafkaError as exc:
        return {**out, "error_code": exc.code}
    meta = txns.coordinator.meta(key)
    if meta is None:
        return {**out, "error_code": ErrorCode.transactional_id_not_found}
    by_topic: dict[str, list[int]] = {}
    for pulsar_topic, index in sorted(meta.partitions):
        by_topic.setdefault(_kafka_name(pulsar_topic, ctx), []).append(index)
    return {
        **out, "transaction_state": meta.state.value,
        "transaction_timeout": datetime.timedelta(milliseconds=meta.timeout_ms),
        "transaction_start_time": _ms_time(meta.started_ms),
        "producer_id": meta.producer_id, "producer_epoch": meta.epoch,
        "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
    }  # fmt: skip


def _kafka_name(partition_topic: str, ctx: RequestContext) -> str:
    """The Kafka name of a partition's Pulsar topic, as the client's namespace sees it:
    the short name in it, the full Pulsar name elsewhere (the offsets topic's too)."""
    base = re.sub(r"-partition-\d+$", "", partition_topic)
    home = f"persistent://{ctx.namespace.tenant}/{ctx.namespace.namespace}/"
    return base[len(home) :] if base.startswith(home) else base


async def describe_producers(services: Services, ctx: RequestContext, request: Any) -> Response:
    topics = []
    for t in request.topics:
        parts = []
        for index in t.partition_indexes:
            try:
                _view, plog = await topic_partition(services, ctx, t.name, index,
                                                    op=TopicOp.CONSUME)  # fmt: skip
            except Exception as exc:
                code, message = error_of(exc)
                parts.append({"partition_index": index, "error_code": code,
                              "error_message": message, "active_producers": []})  # fmt: skip
                continue
            open_txns = plog.txns.open_transactions()
            producers = [
                {"producer_id": pid, "producer_epoch": epoch, "last_sequence": seq,
                 "last_timestamp": -1, "coordinator_epoch": -1,
                 "current_txn_start_offset": open_txns.get(pid, -1)}
                for pid, (epoch, seq) in sorted(plog.producers.describe().items())
            ]  # fmt: skip
            parts.append({"partition_index": index, "error_code": ErrorCode.none,
                          "error_message": None, "active_producers": producers})  # fmt: skip
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}


async def write_txn_markers(services: Services, ctx: RequestContext, request: Any) -> Response:
    """Markers into partitions this instance leads; Kafka takes them from its
    coordinators and from admins (ClusterAction), kop from the other live instances
    (kop.txn.peers) and from superusers."""
    allowed = is_peer(ctx.principal, services.owners.instances()) or await ctx.access.cluster()
    results = []
    for m in request.markers:
        marker = Marker(m.transaction_result, m.producer_id, m.producer_epoch, m.coordinator_epoch)
        topics = []
        for t in m.topics:
            parts = []
            for index in t.partition_indexes:
                code = ErrorCode.cluster_authorization_failed
                if allowed:
                    code = await _write_marker(services, ctx, t.name, index, marker)
                parts.append({"partition_index": index, "error_code": code})
            topics.append({"name": t.name, "partitions": parts})
        results.append({"producer_id": m.producer_id, "topics": topics})
    return {"markers": results}


async def _write_marker(
    services: Services, ctx: RequestContext, name: str, index: int, marker: Marker
) -> ErrorCode:
    groups = services.groups
    try:
        if groups is not None and name == groups.offsets_topic:  # AddOffsetsToTxn's
            lead(services, groups.partition_topic(index))
            await groups.pending.end_txn(
                index, marker.producer_id, marker.producer_epoch, marker.commit,
                marker.coordinator_epoch,
            )  # fmt: skip
            return ErrorCode.none
        # No topic permission to check: the caller is a superuser or another instance.
        view = await services.catalog.describe(topic_for(ctx, name))
        if view is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {name!r}")
        if not 0 <= index < view.partitions:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"{name} has no {index}")
        lead(services, view.partition_topic(index))
        plog = await services.logs.of_topic(view, index)
        batch = marker_batch(marker, int(time.time() * 1000))
        done = await plog.begin_append([(read_header(batch), batch)], EntryFormat.KAFKA)
        await done
    except Exception as exc:
        return error_of(exc)[0]
    return ErrorCode.none
