"""What `kafka-transactions` asks: ListTransactions and DescribeTransactions of the
coordinator, DescribeProducers of a partition's leader, and WriteTxnMarkers, with
which `kafka-transactions abort` closes a hanging transaction (one its coordinator
no longer knows) at a partition, as Kafka's brokers write a coordinator's markers."""

from __future__ import annotations

import datetime
import re
import time

from kio.schema.describe_producers.v0.request import DescribeProducersRequest
from kio.schema.describe_producers.v0.response import (
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicResponse,
)
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.describe_transactions.v0.response import (
    DescribeTransactionsResponse,
    TopicData,
)
from kio.schema.describe_transactions.v0.response import (
    TransactionState as DescribedState,
)
from kio.schema.list_transactions.v2.request import ListTransactionsRequest
from kio.schema.list_transactions.v2.response import (
    ListTransactionsResponse,
)
from kio.schema.list_transactions.v2.response import (
    TransactionState as ListedState,
)
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.schema.write_txn_markers.v2.request import WriteTxnMarkersRequest
from kio.schema.write_txn_markers.v2.response import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersResponse,
)
from kio.static.primitive import i16, i32, i32Timedelta, i64

from kop.api.context import (
    RequestContext,
    Services,
    error_of,
    lead,
    topic_for,
    topic_partition,
)
from kop.api.patterns import compile_client_pattern
from kop.api.routes import Now, Route
from kop.api.transactions import txn_key
from kop.entries.formats import EntryFormat
from kop.protocol.control import Marker, marker_batch
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.records import read_header
from kop.protocol.values import NO_THROTTLE, kafka_time
from kop.security.authorizer import TopicOp
from kop.txn.peers import is_peer
from kop.txn.state import State

_STATES = {s.value for s in State}


async def list_transactions(
    services: Services, ctx: RequestContext, request: ListTransactionsRequest
) -> Now[ListTransactionsResponse]:
    """The transactions this instance coordinates, of the client's namespace, if it
    may use transactional ids there (Kafka leaves out what it may not describe).
    A `transactional_id_pattern` (v2, KIP-1152) must match a whole id, as Kafka's
    RE2/J `matches()`; null or empty filters nothing; one RE2 refuses, or longer than
    MAX_PATTERN_CHARS, is INVALID_REGULAR_EXPRESSION with nothing listed (Kafka's
    error answer), whether or not the client may see any id. Before v1 there is no
    duration filter (-1), before v2 no pattern (null)."""
    wanted = set(request.state_filters)
    pids = set(request.producer_id_filters)
    duration = request.duration_filter
    unknown = tuple(sorted(wanted - _STATES))

    def answer(
        code: ErrorCode = ErrorCode.none,
        states: tuple[ListedState, ...] = (),
        unknown_filters: tuple[str, ...] = unknown,
    ) -> Now[ListTransactionsResponse]:
        return Now(
            ListTransactionsResponse(
                throttle_time=NO_THROTTLE, error_code=code,
                unknown_state_filters=unknown_filters, transaction_states=states,
            )
        )  # fmt: skip

    try:
        txns = services.txns
    except KafkaError as exc:
        return answer(exc.code)
    allowed = await ctx.access.idempotent_write(ctx.namespace)  # may use transactional ids
    if not txns.partitions.all_loaded:
        return answer(ErrorCode.coordinator_load_in_progress)
    # Compiled after the last await: one compiled pattern at a time, for this loop only.
    pattern = None
    if request.transactional_id_pattern:
        try:
            pattern = compile_client_pattern(
                request.transactional_id_pattern, "transactional_id_pattern"
            )
        except KafkaError as exc:
            return answer(exc.code, unknown_filters=())
    if not allowed:
        return answer()
    now = txns.coordinator.now_ms()
    states = []
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
        states.append(
            ListedState(
                transactional_id=TransactionalId(txn_id),
                producer_id=ProducerId(meta.producer_id),
                transaction_state=meta.state.value,
            )
        )
    return answer(states=tuple(states))


async def describe_transactions(
    services: Services, ctx: RequestContext, request: DescribeTransactionsRequest
) -> Now[DescribeTransactionsResponse]:
    states = [await _describe(services, ctx, t) for t in request.transactional_ids]
    return Now(
        DescribeTransactionsResponse(throttle_time=NO_THROTTLE, transaction_states=tuple(states))
    )


async def _describe(services: Services, ctx: RequestContext, txn_id: str) -> DescribedState:
    def described(
        code: ErrorCode, state: str = "", timeout_ms: int = 0, started_ms: int = -1,
        pid: int = -1, epoch: int = -1, topics: tuple[TopicData, ...] = (),
    ) -> DescribedState:  # fmt: skip
        """No start time is Kafka's -1 (kafka_time)."""
        return DescribedState(
            error_code=code, transactional_id=TransactionalId(txn_id), transaction_state=state,
            transaction_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
            transaction_start_time=kafka_time(started_ms),
            producer_id=ProducerId(pid), producer_epoch=i16(epoch), topics=topics,
        )  # fmt: skip

    try:
        key = await txn_key(services, ctx, txn_id)
        txns = services.txns
        txns.check(key)
    except KafkaError as exc:
        return described(exc.code)
    meta = txns.coordinator.meta(key)
    if meta is None:
        return described(ErrorCode.transactional_id_not_found)
    by_topic: dict[str, list[i32]] = {}
    for pulsar_topic, index in sorted(meta.partitions):
        by_topic.setdefault(_kafka_name(pulsar_topic, ctx), []).append(i32(index))
    return described(
        ErrorCode.none, meta.state.value, meta.timeout_ms, meta.started_ms,
        meta.producer_id, meta.epoch,
        tuple(TopicData(topic=TopicName(t), partitions=tuple(ps)) for t, ps in by_topic.items()),
    )  # fmt: skip


def _kafka_name(partition_topic: str, ctx: RequestContext) -> str:
    """The Kafka name of a partition's Pulsar topic, as the client's namespace sees it:
    the short name in it, the full Pulsar name elsewhere (the offsets topic's too)."""
    base = re.sub(r"-partition-\d+$", "", partition_topic)
    home = f"persistent://{ctx.namespace.tenant}/{ctx.namespace.namespace}/"
    return base[len(home) :] if base.startswith(home) else base


async def describe_producers(
    services: Services, ctx: RequestContext, request: DescribeProducersRequest
) -> Now[DescribeProducersResponse]:
    """Each partition's producers (no timestamps or coordinator epochs kept: -1)."""
    topics = []
    for t in request.topics:
        parts = []
        for index in t.partition_indexes:
            try:
                _view, plog = await topic_partition(services, ctx, t.name, index,
                                                    op=TopicOp.CONSUME)  # fmt: skip
            except Exception as exc:
                code, message = error_of(exc)
                parts.append(_partition(index, code, message))
                continue
            open_txns = plog.txns.open_transactions()
            producers = tuple(
                ProducerState(
                    producer_id=ProducerId(pid), producer_epoch=i32(epoch),
                    last_sequence=i32(seq), last_timestamp=i64(-1), coordinator_epoch=i32(-1),
                    current_txn_start_offset=i64(open_txns.get(pid, -1)),
                )
                for pid, (epoch, seq) in sorted(plog.producers.describe().items())
            )  # fmt: skip
            parts.append(_partition(index, ErrorCode.none, None, producers))
        topics.append(TopicResponse(name=t.name, partitions=tuple(parts)))
    return Now(DescribeProducersResponse(throttle_time=NO_THROTTLE, topics=tuple(topics)))


def _partition(
    index: i32, code: ErrorCode, message: str | None, producers: tuple[ProducerState, ...] = ()
) -> PartitionResponse:
    return PartitionResponse(
        partition_index=index, error_code=code, error_message=message, active_producers=producers
    )


async def write_txn_markers(
    services: Services, ctx: RequestContext, request: WriteTxnMarkersRequest
) -> Now[WriteTxnMarkersResponse]:
    """Markers into partitions this instance leads; Kafka takes them from its
    coordinators and from admins (ClusterAction), kop from the other live instances
    (kop.txn.peers) and from superusers."""
    allowed = is_peer(ctx.principal, services.ownership.instances()) or await ctx.access.cluster()
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
                parts.append(
                    WritableTxnMarkerPartitionResult(partition_index=index, error_code=code)
                )
            topics.append(WritableTxnMarkerTopicResult(name=t.name, partitions=tuple(parts)))
        results.append(WritableTxnMarkerResult(producer_id=m.producer_id, topics=tuple(topics)))
    return Now(WriteTxnMarkersResponse(markers=tuple(results)))


ROUTES = (
    Route(
        ApiKey.WRITE_TXN_MARKERS, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
        write_txn_markers,
    ),
    Route(
        ApiKey.DESCRIBE_PRODUCERS, DescribeProducersRequest, DescribeProducersResponse,
        describe_producers,
    ),
    Route(
        ApiKey.DESCRIBE_TRANSACTIONS, DescribeTransactionsRequest, DescribeTransactionsResponse,
        describe_transactions,
    ),
    Route(
        ApiKey.LIST_TRANSACTIONS, ListTransactionsRequest, ListTransactionsResponse,
        list_transactions,
    ),
)  # fmt: skip


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
