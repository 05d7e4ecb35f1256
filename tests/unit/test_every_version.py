"""Every route's answers, over their success and error paths, written at every version
kop serves: what a handler answers in the newest version must be something each older
version can carry (kop/protocol/versions.py refuses a value it cannot), and must encode.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime
import struct
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, cast

import jwt
import pytest
from kio.schema.add_offsets_to_txn.v4.request import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import (
    AddPartitionsToTxnRequest as AddPartitionsToTxnV3Request,
)
from kio.schema.add_partitions_to_txn.v3.request import (
    AddPartitionsToTxnTopic as AddPartitionsToTxnV3Topic,
)
from kio.schema.add_partitions_to_txn.v5.request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from kio.schema.alter_client_quotas.v1.request import AlterClientQuotasRequest, OpData
from kio.schema.alter_client_quotas.v1.request import EntityData as AlterEntity
from kio.schema.alter_client_quotas.v1.request import EntryData as AlterEntry
from kio.schema.alter_share_group_offsets.v0.request import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.schema.api_versions.v4.request import ApiVersionsRequest
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.delete_acls.v3.request import DeleteAclsFilter, DeleteAclsRequest
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.delete_share_group_offsets.v0.request import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
)
from kio.schema.describe_acls.v3.request import DescribeAclsRequest
from kio.schema.describe_client_quotas.v1.request import (
    ComponentData,
    DescribeClientQuotasRequest,
)
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.describe_producers.v0.request import DescribeProducersRequest
from kio.schema.describe_producers.v0.request import TopicRequest as DescribeProducersTopic
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
)
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.describe_user_scram_credentials.v0.request import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from kio.schema.end_txn.v5.request import EndTxnRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.init_producer_id.v5.request import InitProducerIdRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.leave_group.v5.request import LeaveGroupRequest, MemberIdentity
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.list_transactions.v2.request import ListTransactionsRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_delete.v0.request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from kio.schema.offset_fetch.v9.request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kio.schema.offset_for_leader_epoch.v4.response import (
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from kio.schema.produce.v12.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.share_acknowledge.v2.request import (
    AcknowledgementBatch as ShareAckRequestBatch,
)
from kio.schema.share_acknowledge.v2.request import AcknowledgePartition as ShareAckPartition
from kio.schema.share_acknowledge.v2.request import AcknowledgeTopic as ShareAckTopic
from kio.schema.share_acknowledge.v2.request import ShareAcknowledgeRequest
from kio.schema.share_fetch.v2.request import AcknowledgementBatch as ShareAckBatch
from kio.schema.share_fetch.v2.request import FetchPartition as ShareFetchPartition
from kio.schema.share_fetch.v2.request import FetchTopic as ShareFetchTopic
from kio.schema.share_fetch.v2.request import ShareFetchRequest
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.schema.txn_offset_commit.v5.request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kio.schema.types import BrokerId, GroupId, ProducerId, TopicName, TransactionalId
from kio.schema.write_txn_markers.v2.request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from kio.static.primitive import f64, i8, i16, i32, i32Timedelta, i64

from kop.api import (
    alter_configs,
    api_versions,
    configs,
    consumer_groups,
    delete_records,
    fetch,
    find_coordinator,
    group_admin,
    groups,
    leader_epochs,
    list_offsets,
    log_dirs,
    metadata,
    offset_fetch,
    offsets,
    produce,
    producer_ids,
    replicas,
    share_fetch,
    share_groups,
    share_offsets,
    topic_partitions,
    topics_admin,
    transactions,
    txn_admin,
    txn_offsets,
)
from kop.api.context import RequestContext, Services
from kop.api.dispatch import ROUTES
from kop.api.routes import Later, Now
from kop.log.batch_rules import InvalidTimestamps
from kop.partitions.manager import LogManager
from kop.protocol.error_replies import top_level_error_response
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import (
    SUPPORTED_VERSIONS,
    ApiKey,
    RequestHeader,
    encode_response,
    request_schema,
    response_schema,
)
from kop.protocol.values import NO_THROTTLE
from kop.protocol.versions import downgrade, upgrade
from kop.storage.naming import Namespace, PulsarTopic
from kop.topics.catalog import TopicCatalog, TopicDefaults
from kop.topics.partition_budget import PartitionBudget
from tests.sim.memory_admin import MemoryAdmin
from tests.sim.memory_log import MemoryLog
from tests.sim.memory_services import memory_services

NS = Namespace("public", "default")
CTX = RequestContext(NS, "test", 0)

SUPPORTED = [
    (api, version)
    for api, (low, high) in sorted(SUPPORTED_VERSIONS.items())
    for version in range(low, high + 1)
]

HANDLER_CASES = list(SUPPORTED)


# --- every handler, every supported version ----------------------------------


class _NoLogs:
    """Partition logs are out of scope: opening one fails like a log still loading."""

    async def partition(self, topic: str, **_opened_as: Any) -> Any:
        raise KafkaError(ErrorCode.leader_not_available, f"{topic} is loading")

    async def drop(self, topic: str) -> None:
        return None

    def leader_epoch(self, topic: str, leader: str) -> int:
        return 0

    def is_open(self, topic: str) -> bool:
        return True  # produce begins at once, and meets `partition` failing


async def _services() -> Services:
    admin = MemoryAdmin(MemoryLog())
    catalog = TopicCatalog(admin, TopicDefaults(), PartitionBudget(admin, 100, 1000, NS), ttl_s=0)
    await catalog.create(PulsarTopic(NS, "t", "t"), 2, {})
    return await memory_services(catalog, cast(LogManager, _NoLogs()))


def _ns(**kwargs: Any) -> Any:
    return SimpleNamespace(**kwargs)


async def _resolved(result: Any) -> Any:
    """Handlers may answer with an awaitable of the response (see HandlerResult), typed
    ones in one of the two phases (kop/api/routes.py)."""
    while True:
        if isinstance(result, Now):
            result = result.answer
        elif isinstance(result, Later):
            result = await result.answer
        elif isinstance(result, Awaitable):
            result = await result
        else:
            return result


def _appended(offset: int) -> asyncio.Future[int]:
    """A write counted at `offset` (what `begin_append` gives once counted)."""
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    done.set_result(offset)
    return done


def _init(
    txn_id: str | None, timeout: datetime.timedelta, pid: int = -1, epoch: int = -1
) -> InitProducerIdRequest:
    return InitProducerIdRequest(
        transactional_id=None if txn_id is None else TransactionalId(txn_id),
        transaction_timeout=i32Timedelta.parse(timeout),
        producer_id=ProducerId(pid),
        producer_epoch=i16(epoch),
    )


async def _init_txn(s: Services, ctx: RequestContext) -> int:
    """The producer id transactional id "tx" gets (at epoch 0)."""
    init = await producer_ids.handle(s, ctx, _init("tx", datetime.timedelta(seconds=60)))
    assert init.answer.error_code is ErrorCode.none, init
    return init.answer.producer_id


def _txn_topic(name: str, *partitions: int) -> AddPartitionsToTxnTopic:
    return AddPartitionsToTxnTopic(name=TopicName(name), partitions=tuple(map(i32, partitions)))


def _v3_request(
    pid: int, topics: tuple[AddPartitionsToTxnTopic, ...], version: int
) -> AddPartitionsToTxnRequest:
    """A v0-3 client's AddPartitionsToTxn (of `version`'s class) as its route reads it."""
    sent = AddPartitionsToTxnV3Request(
        v3_and_below_transactional_id=TransactionalId("tx"),
        v3_and_below_producer_id=ProducerId(pid),
        v3_and_below_producer_epoch=i16(0),
        v3_and_below_topics=tuple(
            AddPartitionsToTxnV3Topic(name=t.name, partitions=t.partitions) for t in topics
        ),
    )
    old = upgrade(sent, request_schema(ApiKey.ADD_PARTITIONS_TO_TXN, version))
    read: AddPartitionsToTxnRequest = ROUTES[ApiKey.ADD_PARTITIONS_TO_TXN].read(old, version)
    return read


async def _add_v3(s: Services, pid: int, topics: tuple[AddPartitionsToTxnTopic, ...]) -> None:
    """`topics` join the transaction of "tx", as a v3 client adds them."""
    ctx = RequestContext(NS, "test", 3)
    added = await transactions.add_partitions(s, ctx, _v3_request(pid, topics, 3))
    (result,) = added.answer.results_by_transaction
    assert all(
        p.partition_error_code is ErrorCode.none
        for t in result.topic_results
        for p in t.results_by_partition
    ), added


async def _handler_responses(api: ApiKey, version: int) -> list[Any]:
    """What the real handlers answer, over their success and error paths."""
    s = await _services()
    try:
        return await _answers(s, api, version)
    finally:
        await close_services(s)


async def close_services(s: Services) -> None:
    """What `_services` started: their background tasks must not outlive the test's
    loop ('Task was destroyed but it is pending' at the end of the run)."""
    assert s.txns is not None and s.groups is not None
    await s.txns.close()
    await s.groups.close()


async def _answers(s: Services, api: ApiKey, version: int) -> list[Any]:
    ctx = RequestContext(NS, "test", version)
    calls: list[Any] = []
    if api == ApiKey.PRODUCE:
        part = PartitionProduceData(index=i32(0), records=None)
        topics = tuple(
            TopicProduceData(name=TopicName(n), partition_data=(part,)) for n in ("t", "gone")
        )
        wait = i32Timedelta.parse(datetime.timedelta(seconds=30))

        def produced(txn: str | None, acks: int) -> ProduceRequest:
            return ProduceRequest(
                transactional_id=None if txn is None else TransactionalId(txn),
                acks=i16(acks), timeout=wait, topic_data=topics,
            )  # fmt: skip

        calls = [
            produce.handle(s, ctx, produced(None, 1)),
            produce.handle(s, ctx, produced("x", -1)),
            produce.handle(s, ctx, produced(None, 2)),  # refused: INVALID_REQUIRED_ACKS
            produce._finish(
                produced(None, 1),
                [
                    ("t", 0, (_appended(41), -1)),
                    ("t", 1, KafkaError(ErrorCode.not_leader_or_follower)),
                    ("t", 2, (_appended(42), 1_700_000_000_123)),  # LogAppendTime
                    ("t", 3, InvalidTimestamps([(0, "too old")])),  # record_errors (v8+)
                ],
            ),
        ]
    elif api == ApiKey.FETCH:
        f_parts = (
            FetchPartition(partition=i32(0), fetch_offset=i64(0), partition_max_bytes=i32(1 << 20)),
        )
        f_request = FetchRequest(
            max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=500)),
            min_bytes=i32(1),
            max_bytes=i32(0),
            topics=tuple(FetchTopic(topic=TopicName(n), partitions=f_parts) for n in ("t", "gone")),
            forgotten_topics_data=(),
        )
        ok_part = fetch._part(0, ErrorCode.none, 10, 10, 0, b"")
        calls = [fetch.handle(s, ctx, f_request), _resolved(fetch._response([(("t", 0), ok_part)]))]
        if version >= 7:  # a session opened (epoch 0), then continued, at each version with them
            opened = fetch._response([(("t", 0), ok_part)], session_id=2_000_000_000)
            calls += [
                fetch.handle(s, ctx, dataclasses.replace(f_request, session_epoch=i32(0))),
                _resolved(opened),
                _resolved(fetch._response([], ErrorCode.invalid_fetch_session_epoch)),
            ]
    elif api == ApiKey.LIST_OFFSETS:
        lo_parts = (
            ListOffsetsPartition(partition_index=i32(0), timestamp=i64(-1)),
            ListOffsetsPartition(partition_index=i32(5), timestamp=i64(-2)),
        )
        lo_request = ListOffsetsRequest(
            replica_id=BrokerId(-1),
            isolation_level=i8(0),
            topics=tuple(
                ListOffsetsTopic(name=TopicName(n), partitions=lo_parts) for n in ("t", "gone")
            ),
        )
        calls = [list_offsets.handle(s, ctx, lo_request)]
    elif api == ApiKey.METADATA:
        named = tuple(
            MetadataRequestTopic(topic_id=None, name=None if n is None else TopicName(n))
            for n in ("t", "auto", "bad name!", None)
        )
        calls = [
            metadata.handle(
                s, ctx, MetadataRequest(topics=None, include_topic_authorized_operations=False)
            ),
            metadata.handle(
                s,
                ctx,
                MetadataRequest(
                    topics=named,
                    allow_auto_topic_creation=True,
                    include_topic_authorized_operations=False,
                ),
            ),
        ]
    elif api == ApiKey.API_VERSIONS:
        asked = ApiVersionsRequest(client_software_name="test", client_software_version="1")
        calls = [
            api_versions.handle(s, ctx, asked),
        ]
    elif api in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
        calls = sasl_answers(api)
    elif api in (ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
        calls = await acl_answers(api, s, version)
    elif api in (ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS):
        calls = await scram_answers(api, s, version)
    elif api in (ApiKey.DESCRIBE_CLIENT_QUOTAS, ApiKey.ALTER_CLIENT_QUOTAS):
        calls = await quota_answers(api, s, version)
    elif api in TOPIC_ADMIN_APIS:
        calls = topic_admin_answers(s, ctx, api)
    elif api == ApiKey.INIT_PRODUCER_ID:
        minute = datetime.timedelta(seconds=60)
        calls = [
            producer_ids.handle(s, ctx, _init("tx", minute)),
            producer_ids.handle(s, ctx, _init("tx", minute * 10)),  # over the coordinator's max
            producer_ids.handle(s, ctx, _init(None, minute, pid=5, epoch=2)),
            producer_ids.handle(s, ctx, _init(None, minute)),
        ]
    elif api in (ApiKey.LIST_TRANSACTIONS, ApiKey.DESCRIBE_TRANSACTIONS,
                 ApiKey.DESCRIBE_PRODUCERS, ApiKey.WRITE_TXN_MARKERS):  # fmt: skip
        pid = await _init_txn(s, ctx)
        await _add_v3(s, pid, (_txn_topic("t", 0),))
        described = (
            DescribeProducersTopic(name=TopicName("t"), partition_indexes=(i32(0), i32(7))),
            DescribeProducersTopic(name=TopicName("gone"), partition_indexes=(i32(0),)),
        )
        marker = WritableTxnMarker(
            producer_id=ProducerId(5),
            producer_epoch=i16(0),
            transaction_result=False,
            coordinator_epoch=i32(0),
            transaction_version=i8(0),
            topics=tuple(
                WritableTxnMarkerTopic(name=t.name, partition_indexes=t.partition_indexes)
                for t in described
            ),
        )
        admin: dict[ApiKey, Callable[[], list[Any]]] = {
            ApiKey.LIST_TRANSACTIONS: lambda: [
                txn_admin.list_transactions(s, ctx, ListTransactionsRequest()),
                txn_admin.list_transactions(
                    s,
                    ctx,
                    ListTransactionsRequest(
                        state_filters=("Ongoing", "Nope"),
                        producer_id_filters=(ProducerId(1),),
                        duration_filter=i64(0),
                        transactional_id_pattern="t.*",
                    ),
                ),
            ],
            ApiKey.DESCRIBE_TRANSACTIONS: lambda: [
                txn_admin.describe_transactions(
                    s,
                    ctx,
                    DescribeTransactionsRequest(
                        transactional_ids=(TransactionalId("tx"), TransactionalId("nope"))
                    ),
                ),
            ],
            ApiKey.DESCRIBE_PRODUCERS: lambda: [
                txn_admin.describe_producers(s, ctx, DescribeProducersRequest(topics=described)),
            ],
            ApiKey.WRITE_TXN_MARKERS: lambda: [
                txn_admin.write_txn_markers(s, ctx, WriteTxnMarkersRequest(markers=(marker,))),
            ],
        }
        calls = admin[api]()
    elif api in (ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.TXN_OFFSET_COMMIT):
        pid = await _init_txn(s, ctx)
        commit_parts = (
            TxnOffsetCommitRequestPartition(partition_index=i32(0), committed_offset=i64(3),
                                            committed_leader_epoch=i32(-1),
                                            committed_metadata=None),
            TxnOffsetCommitRequestPartition(partition_index=i32(9), committed_offset=i64(3),
                                            committed_leader_epoch=i32(-1),
                                            committed_metadata=""),
        )  # fmt: skip
        commit = TxnOffsetCommitRequest(
            transactional_id=TransactionalId("tx"),
            group_id=GroupId("g"),
            producer_id=ProducerId(pid),
            producer_epoch=i16(0),
            generation_id=i32(-1),
            member_id="",
            group_instance_id=None,
            topics=tuple(
                TxnOffsetCommitRequestTopic(name=TopicName(n), partitions=commit_parts)
                for n in ("t", "gone")
            ),
        )

        def add_offsets(producer_id: int) -> AddOffsetsToTxnRequest:
            return AddOffsetsToTxnRequest(
                transactional_id=TransactionalId("tx"), producer_id=ProducerId(producer_id),
                producer_epoch=i16(0), group_id=GroupId("g"),
            )  # fmt: skip

        calls = (
            [txn_offsets.add_offsets(s, ctx, add_offsets(pid)),
             txn_offsets.add_offsets(s, ctx, add_offsets(pid + 1))]
            if api == ApiKey.ADD_OFFSETS_TO_TXN
            else [txn_offsets.txn_offset_commit(s, ctx, commit)]
        )  # fmt: skip
    elif api in (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.END_TXN):
        pid = await _init_txn(s, ctx)
        txn_topics = (_txn_topic("t", 0, 1), _txn_topic("gone", 0))

        def batched(topics: tuple[AddPartitionsToTxnTopic, ...], verify: bool) -> Any:
            """v4+: a broker's (kop's superuser's here) batch of one transaction."""
            return transactions.add_partitions(s, ctx, AddPartitionsToTxnRequest(transactions=(
                AddPartitionsToTxnTransaction(
                    transactional_id=TransactionalId("tx"), producer_id=ProducerId(pid),
                    producer_epoch=i16(0), verify_only=verify, topics=topics),
            )))  # fmt: skip

        if api == ApiKey.END_TXN:
            await _add_v3(s, pid, txn_topics[:1])

            def end(producer_id: int, committed: bool) -> EndTxnRequest:
                return EndTxnRequest(
                    transactional_id=TransactionalId("tx"), producer_id=ProducerId(producer_id),
                    producer_epoch=i16(0), committed=committed,
                )  # fmt: skip

            calls = [
                transactions.end_txn(s, ctx, end(pid, True)),
                transactions.end_txn(s, ctx, end(pid + 1, False)),
            ]
        elif version < transactions.BATCHED:  # the client's one transaction, v0-3's shape
            calls = [
                transactions.add_partitions(s, ctx, _v3_request(pid, txn_topics[:1], version)),
                transactions.add_partitions(s, ctx, _v3_request(pid, txn_topics, version)),
            ]
        else:
            calls = [
                batched(txn_topics[:1], verify=False),
                batched(txn_topics, verify=False),
                batched(txn_topics[:1], verify=True),
            ]
    elif api == ApiKey.OFFSET_FOR_LEADER_EPOCH:
        le_parts = (
            OffsetForLeaderPartition(
                partition=i32(0), current_leader_epoch=i32(-1), leader_epoch=i32(0)
            ),
            OffsetForLeaderPartition(
                partition=i32(5), current_leader_epoch=i32(3), leader_epoch=i32(0)
            ),
        )
        le_request = OffsetForLeaderEpochRequest(
            topics=tuple(
                OffsetForLeaderTopic(topic=TopicName(n), partitions=le_parts) for n in ("t", "gone")
            )
        )
        ok = leader_epochs._part(0, ErrorCode.none, 0, 42)
        calls = [
            leader_epochs.handle(s, ctx, le_request),
            _resolved(
                OffsetForLeaderEpochResponse(
                    throttle_time=NO_THROTTLE,
                    topics=(OffsetForLeaderTopicResult(topic=TopicName("t"), partitions=(ok,)),),
                )
            ),
        ]
    elif api in CONFIG_APIS:
        calls = config_answers(s, ctx, api)
    elif api in REPLICA_APIS:
        calls = replica_answers(s, ctx, api)
    calls += _group_calls(s, ctx, api)
    responses = []
    try:
        for call in calls:
            response = await _resolved(call)
            assert response is not None
            responses.append(response)
    finally:
        assert s.groups is not None and s.txns is not None
        await s.txns.close()
        await s.groups.close()
    return responses


def join_request(
    member_id: str = "", protocol_type: str = "consumer", group: str = "g",
    metadata: bytes = b"m", protocol: str = "range",
) -> JoinGroupRequest:  # fmt: skip
    return JoinGroupRequest(
        group_id=GroupId(group), member_id=member_id, group_instance_id=None,
        protocol_type=protocol_type,
        protocols=(JoinGroupRequestProtocol(name=protocol, metadata=metadata),), reason=None,
        session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
    )  # fmt: skip


def sync_request(
    member_id: str, generation: int, assignment: bytes | None = b"a", group: str = "g",
    protocol: tuple[str | None, str | None] = ("consumer", "range"),
) -> SyncGroupRequest:  # fmt: skip
    """`assignment` None: none given (a follower's); `protocol`: type and name (v5)."""
    given = () if assignment is None else (
        SyncGroupRequestAssignment(member_id=member_id, assignment=assignment),
    )  # fmt: skip
    return SyncGroupRequest(
        group_id=GroupId(group), generation_id=i32(generation), member_id=member_id,
        group_instance_id=None, protocol_type=protocol[0], protocol_name=protocol[1],
        assignments=given,
    )  # fmt: skip


def commit_request(
    group: str, topics: dict[str, list[int]], generation: int = -1, member_id: str = "",
    offset: int = 5, metadata: str = "m",
) -> OffsetCommitRequest:  # fmt: skip
    """Offset `offset` for partitions {topic: [index, ...]}."""
    return OffsetCommitRequest(
        group_id=GroupId(group), generation_id_or_member_epoch=i32(generation),
        member_id=member_id, group_instance_id=None,
        topics=tuple(
            OffsetCommitRequestTopic(name=TopicName(name), partitions=tuple(
                OffsetCommitRequestPartition(
                    partition_index=i32(p), committed_offset=i64(offset),
                    committed_leader_epoch=i32(-1), committed_metadata=metadata,
                ) for p in parts
            ))
            for name, parts in topics.items()
        ),
    )  # fmt: skip


def delete_offsets_request(group: str, topics: dict[str, list[int]]) -> OffsetDeleteRequest:
    return OffsetDeleteRequest(
        group_id=GroupId(group),
        topics=tuple(
            OffsetDeleteRequestTopic(name=TopicName(name), partitions=tuple(
                OffsetDeleteRequestPartition(partition_index=i32(p)) for p in parts
            ))
            for name, parts in topics.items()
        ),
    )  # fmt: skip


def consumer_heartbeat(member: str, epoch: int, group: str = "g") -> ConsumerGroupHeartbeatRequest:
    """A KIP-848 heartbeat: a join (epoch 0) subscribes to topic "t" by name and regex."""
    joining = epoch == 0
    return ConsumerGroupHeartbeatRequest(
        group_id=GroupId(group), member_id=member, member_epoch=i32(epoch),
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30 if joining else -1)),
        subscribed_topic_names=(TopicName("t"),) if joining else None,
        subscribed_topic_regex="t.*" if joining else None,
        topic_partitions=() if joining else None,
    )  # fmt: skip


def share_heartbeat(member: str, epoch: int, group: str = "sg") -> ShareGroupHeartbeatRequest:
    """A KIP-932 heartbeat: a join (epoch 0) subscribes to topic "t"."""
    return ShareGroupHeartbeatRequest(
        group_id=GroupId(group), member_id=member, member_epoch=i32(epoch),
        subscribed_topic_names=(TopicName("t"),) if epoch == 0 else None,
    )  # fmt: skip


def describe_groups_request(*names: str) -> DescribeGroupsRequest:
    return DescribeGroupsRequest(
        groups=tuple(GroupId(n) for n in names), include_authorized_operations=False
    )


def delete_groups_request(*names: str) -> DeleteGroupsRequest:
    return DeleteGroupsRequest(groups_names=tuple(GroupId(n) for n in names))


def _group_calls(s: Services, ctx: RequestContext, api: ApiKey) -> list[Any]:
    """Group and offset APIs over the real coordinator (in-memory offsets topic):
    the calls run in order, so later ones see the group the join made. Batches of
    coordinator keys and of leaving members only where the version has them."""
    commit = commit_request("solo", {"t": [0, 9], "gone": [0]})
    wanted = (OffsetFetchRequestTopics(name=TopicName("t"), partition_indexes=(i32(0), i32(1))),)

    def fetch(*asked: tuple[str, Any]) -> OffsetFetchRequest:
        return OffsetFetchRequest(
            groups=tuple(OffsetFetchRequestGroup(group_id=GroupId(g), topics=t) for g, t in asked)
        )

    def coordinators(key_type: int, *keys: str) -> FindCoordinatorRequest:
        return FindCoordinatorRequest(key_type=i8(key_type), coordinator_keys=keys)

    async def described_consumer_group() -> Any:
        """A consumer group "cg" with a member, described beside a classic and no group."""
        await _resolved(consumer_groups.heartbeat(s, ctx, consumer_heartbeat("m2", 0, "cg")))
        asked = ConsumerGroupDescribeRequest(
            group_ids=(GroupId("cg"), GroupId("g"), GroupId("nope")),
            include_authorized_operations=False,
        )
        return await _resolved(consumer_groups.describe(s, ctx, asked))

    async def described_share_group() -> Any:
        """A share group "sg" with a member, described beside a classic and no group."""
        await _resolved(share_groups.heartbeat(s, ctx, share_heartbeat("s2", 0)))
        asked = ShareGroupDescribeRequest(
            group_ids=(GroupId("sg"), GroupId("g"), GroupId("nope")),
            include_authorized_operations=False,
        )
        return await _resolved(share_groups.describe(s, ctx, asked))

    async def described_offsets(topics: dict[str, list[int]] | None) -> Any:
        """Share-group offsets of a group with a member: every topic it knows (None), or
        partitions named, one past the topic's end and one of no topic."""
        await _resolved(share_groups.heartbeat(s, ctx, share_heartbeat("s5", 0)))
        named = None if topics is None else tuple(
            DescribeShareGroupOffsetsRequestTopic(
                topic_name=TopicName(n), partitions=tuple(i32(p) for p in ps)
            ) for n, ps in topics.items()
        )  # fmt: skip
        asked = DescribeShareGroupOffsetsRequest(groups=(
            DescribeShareGroupOffsetsRequestGroup(group_id=GroupId("sg"), topics=named),
            DescribeShareGroupOffsetsRequestGroup(group_id=GroupId(""), topics=()),
        ))  # fmt: skip
        return await _resolved(share_offsets.describe(s, ctx, asked))

    async def altered_offsets(group: str) -> Any:
        """A group with members (NON_EMPTY_GROUP), or an empty one: partitions of a topic
        (led here, its log still loading), one past its end, and a topic that is none."""
        if group == "sg":
            await _resolved(share_groups.heartbeat(s, ctx, share_heartbeat("s6", 0)))
        asked = AlterShareGroupOffsetsRequest(group_id=GroupId(group), topics=tuple(
            AlterShareGroupOffsetsRequestTopic(topic_name=TopicName(n), partitions=tuple(
                AlterShareGroupOffsetsRequestPartition(partition_index=i32(p), start_offset=i64(0))
                for p in ps
            )) for n, ps in (("t", [0, 9]), ("nope", [0]))
        ))  # fmt: skip
        return await _resolved(share_offsets.alter(s, ctx, asked))

    async def deleted_offsets(group: str) -> Any:
        asked = DeleteShareGroupOffsetsRequest(group_id=GroupId(group), topics=(
            DeleteShareGroupOffsetsRequestTopic(topic_name=TopicName("t")),
            DeleteShareGroupOffsetsRequestTopic(topic_name=TopicName("nope")),
        ))  # fmt: skip
        return await _resolved(share_offsets.delete(s, ctx, asked))

    async def share_topics(acks: bool) -> tuple[ShareFetchTopic, ...]:
        view = await s.catalog.describe(PulsarTopic(NS, "t", "t"))
        assert view is not None
        batches = (ShareAckBatch(first_offset=i64(0), last_offset=i64(1),
                                 acknowledge_types=(i8(1),)),) if acks else ()  # fmt: skip
        part = ShareFetchPartition(partition_index=i32(0), acknowledgement_batches=batches)
        return (ShareFetchTopic(topic_id=view.topic_id, partitions=(part,)),)

    async def share_fetched(epoch: int, member: str = "s3") -> Any:
        """A fetch opening a session (its partition unserved here), one at an epoch the
        session does not have, and one without a member id."""
        asked = ShareFetchRequest(
            group_id=GroupId("sg"), member_id=member, share_session_epoch=i32(epoch),
            max_wait=i32Timedelta.parse(datetime.timedelta(0)), min_bytes=i32(1),
            max_records=i32(10), batch_size=i32(10), topics=await share_topics(False),
            forgotten_topics_data=(),
        )  # fmt: skip
        return await _resolved(share_fetch.share_fetch(s, ctx, asked))

    async def share_acknowledged(epoch: int) -> Any:
        await share_fetched(0, "s4")
        topics = tuple(
            ShareAckTopic(topic_id=t.topic_id, partitions=tuple(
                ShareAckPartition(partition_index=p.partition_index, acknowledgement_batches=(
                    ShareAckRequestBatch(first_offset=i64(0), last_offset=i64(1),
                                         acknowledge_types=(i8(1),)),
                )) for p in t.partitions
            )) for t in await share_topics(False)
        )  # fmt: skip
        asked = ShareAcknowledgeRequest(
            group_id=GroupId("sg"), member_id="s4", share_session_epoch=i32(epoch), topics=topics
        )
        return await _resolved(share_fetch.share_acknowledge(s, ctx, asked))

    async def joined_then(call: str) -> Any:
        joined = await _resolved(groups.join_group(s, ctx, join_request()))
        if joined is not None and joined.error_code is ErrorCode.member_id_required:
            joined = await _resolved(groups.join_group(s, ctx, join_request(joined.member_id)))
        assert joined is not None and joined.error_code is ErrorCode.none, joined
        member, generation = joined.member_id, joined.generation_id
        if call == "sync":
            return await _resolved(groups.sync_group(s, ctx, sync_request(member, generation)))
        beat = HeartbeatRequest(group_id=GroupId("g"), generation_id=generation,
                                member_id=member, group_instance_id=None)  # fmt: skip
        return await _resolved(groups.heartbeat(s, ctx, beat))

    async def described_after(first: Awaitable[Any]) -> Any:
        await first  # a Stable group: members with metadata and assignment
        return await group_admin.describe_groups(s, ctx, describe_groups_request("g"))

    def leaving(*members: tuple[str, str | None]) -> LeaveGroupRequest:
        return LeaveGroupRequest(group_id=GroupId("g"), members=tuple(
            MemberIdentity(member_id=m, group_instance_id=i, reason=None) for m, i in members
        ))  # fmt: skip

    batches = ctx.api_version >= {ApiKey.FIND_COORDINATOR: 4, ApiKey.LEAVE_GROUP: 3}.get(api, 0)
    cases: dict[ApiKey, Callable[[], list[Any]]] = {
        ApiKey.FIND_COORDINATOR: lambda: [
            find_coordinator.handle(s, ctx, coordinators(0, "g")),
            find_coordinator.handle(s, ctx, coordinators(1, "tx")),
            *([find_coordinator.handle(s, ctx, coordinators(0, "a", "b"))] if batches else []),
        ],
        ApiKey.JOIN_GROUP: lambda: [
            groups.join_group(s, ctx, join_request()),
            groups.join_group(s, ctx, join_request(protocol_type="connect")),
            groups.join_group(s, ctx, join_request(member_id="nobody")),
        ],
        ApiKey.SYNC_GROUP: lambda: [
            joined_then("sync"),
            groups.sync_group(s, ctx, sync_request("x", 1, None, protocol=(None, None))),
        ],
        ApiKey.HEARTBEAT: lambda: [
            joined_then("heartbeat"),
            groups.heartbeat(
                s, ctx, HeartbeatRequest(group_id=GroupId("g"), generation_id=i32(1), member_id="x")
            ),
        ],
        ApiKey.LEAVE_GROUP: lambda: [
            groups.leave_group(s, ctx, leaving(("x", None))),
            *([groups.leave_group(s, ctx, leaving(("x", None), ("", "i")))] if batches else []),
        ],
        ApiKey.DESCRIBE_GROUPS: lambda: [
            described_after(joined_then("sync")),
            group_admin.describe_groups(s, ctx, describe_groups_request("g", "nope")),
        ],
        ApiKey.LIST_GROUPS: lambda: [
            group_admin.list_groups(s, ctx, ListGroupsRequest()),
            group_admin.list_groups(
                s, ctx, ListGroupsRequest(states_filter=("Stable",), types_filter=("classic",))
            ),
        ],
        ApiKey.DELETE_GROUPS: lambda: [
            group_admin.delete_groups(s, ctx, delete_groups_request("g", "nope"))
        ],
        ApiKey.OFFSET_COMMIT: lambda: [offsets.offset_commit(s, ctx, offsets.Commit(commit))],
        ApiKey.OFFSET_FETCH: lambda: [
            offset_fetch.handle(s, ctx, fetch(("solo", wanted))),
            offset_fetch.handle(s, ctx, fetch(("solo", None))),
        ],
        ApiKey.CONSUMER_GROUP_HEARTBEAT: lambda: [
            consumer_groups.heartbeat(s, ctx, consumer_heartbeat("m1", 0)),
            consumer_groups.heartbeat(s, ctx, consumer_heartbeat("m1", 99)),  # fenced
            consumer_groups.heartbeat(s, ctx, consumer_heartbeat("m1", -1)),
        ],
        ApiKey.CONSUMER_GROUP_DESCRIBE: lambda: [described_consumer_group()],
        ApiKey.SHARE_GROUP_HEARTBEAT: lambda: [
            share_groups.heartbeat(s, ctx, share_heartbeat("s1", 0)),
            share_groups.heartbeat(s, ctx, share_heartbeat("s1", 99)),  # fenced
            share_groups.heartbeat(s, ctx, share_heartbeat("s1", -1)),
        ],
        ApiKey.SHARE_GROUP_DESCRIBE: lambda: [described_share_group()],
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: lambda: [
            described_offsets(None),
            described_offsets({"t": [0, 5], "nope": [0]}),
        ],
        ApiKey.ALTER_SHARE_GROUP_OFFSETS: lambda: [altered_offsets("sg"), altered_offsets("e")],
        ApiKey.DELETE_SHARE_GROUP_OFFSETS: lambda: [deleted_offsets("sg"), deleted_offsets("e")],
        ApiKey.SHARE_FETCH: lambda: [share_fetched(0), share_fetched(7), share_fetched(0, "")],
        ApiKey.SHARE_ACKNOWLEDGE: lambda: [share_acknowledged(1), share_acknowledged(0)],
        ApiKey.OFFSET_DELETE: lambda: [
            offsets.offset_delete(s, ctx, delete_offsets_request("solo", {"t": [0]})),
            offsets.offset_delete(s, ctx, delete_offsets_request("nope", {})),
        ],
    }
    return cases.get(api, list)()


@pytest.mark.parametrize(("api", "version"), HANDLER_CASES, ids=lambda v: str(v))
async def test_handler_responses_build_in_every_version(api: ApiKey, version: int) -> None:
    """Also fails for an API added to SUPPORTED_VERSIONS without a case above."""
    responses = await _handler_responses(api, version)
    assert responses
    cls = response_schema(api, version)
    for answer in responses:  # in the newest version
        route = ROUTES.get(api)  # SASL answers come from the gate, not a route
        written = (
            route.write(answer, version)
            if route is not None
            else downgrade(answer, response_schema(api, version), api)
        )
        assert type(written) is cls
        encode_response(RequestHeader(api, version, 1, None), written)  # every value fits


def test_too_new_api_versions_is_answered_in_v0() -> None:
    """The server sends it at v0 whatever version was asked (kop/server/decoding.py):
    UNSUPPORTED_VERSION (35) and ApiVersions' own range alone, byte for byte."""
    low, high = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
    reply = api_versions.unsupported_version_response()
    assert type(reply) is response_schema(ApiKey.API_VERSIONS, 0)
    header = RequestHeader(ApiKey.API_VERSIONS, 0, 7, None)
    expected = struct.pack(">ihih", 7, 35, 1, ApiKey.API_VERSIONS) + struct.pack(">hh", low, high)
    assert encode_response(header, reply) == expected


@pytest.mark.parametrize(("api", "version"), SUPPORTED, ids=lambda v: str(v))
def test_top_level_error_response_builds_in_every_version(api: ApiKey, version: int) -> None:
    header = RequestHeader(api, version, 1, None)
    reply: Any = top_level_error_response(header, ErrorCode.invalid_request)
    if any(f.name == "error_code" for f in dataclasses.fields(response_schema(api, version))):
        assert reply is not None
        assert reply.error_code == ErrorCode.invalid_request
    else:
        assert reply is None


def sasl_answers(api: ApiKey) -> list[Any]:
    """Every body a SASL listener's session and the api handlers answer with."""
    from kop.sasl.mechanisms import Plain
    from kop.sasl.session import SaslSession, no_exchange
    from kop.security.tokens import TokenSettings, TokenValidator

    validator = TokenValidator(TokenSettings(secret_key="data:;base64," + "a" * 44))

    def session() -> SaslSession:
        return SaslSession({"PLAIN": lambda: Plain(validator, NS)})

    if api == ApiKey.SASL_HANDSHAKE:
        refused = session()
        return [
            session().handshake("PLAIN").body,
            refused.handshake("GSSAPI").body,
            no_exchange(api),  # a listener without SASL, or after the exchange
        ]
    ok, bad = session(), session()
    ok.handshake("PLAIN")
    bad.handshake("PLAIN")
    token = jwt.encode({"sub": "a", "exp": 4_000_000_000}, base64.b64decode("a" * 44), "HS256")
    return [
        ok.authenticate(f"\0\0token:{token}".encode()).body,
        bad.authenticate(b"\0\0nope").body,
        no_exchange(api),
    ]


async def acl_answers(api: ApiKey, s: Services, version: int) -> list[Any]:
    """The ACL handlers without an authorizer, refused, and over Pulsar grants."""
    from kop.api import acls
    from kop.groups.mirror_names import SubscriptionNames
    from kop.security.acl_admin import AclAdmin
    from kop.security.authorizer import Authorizer
    from kop.security.principal import Principal
    from kop.storage.permissions import CONSUME, PRODUCE
    from tests.sim.memory_admin import MemoryPermissions

    perms = MemoryPermissions()
    await perms.grant(NS, None, "alice", frozenset({PRODUCE, CONSUME}))
    await perms.grant(NS, "t", "bob", frozenset({CONSUME}))
    await perms.set_subscription_roles(NS, "kafka-group-g", frozenset({"bob"}))
    names = SubscriptionNames()
    with_acls = Services(
        **{**vars(s), "acls": AclAdmin(Authorizer(perms, frozenset({"root"}), names.of), names)}
    )
    root = RequestContext(NS, "test", version, principal=Principal("root", NS, "PLAIN"))
    nobody = RequestContext(NS, "test", version, principal=Principal("eve", NS, "PLAIN"))
    any_filter = {
        "resource_type_filter": i8(1), "resource_name_filter": None, "pattern_type_filter": i8(1),
        "principal_filter": None, "host_filter": None, "operation": i8(1),
        "permission_type": i8(1),
    }  # fmt: skip
    request: Any
    if api == ApiKey.DESCRIBE_ACLS:
        handler, request = acls.describe_acls, DescribeAclsRequest(**any_filter)
    elif api == ApiKey.DELETE_ACLS:
        handler = acls.delete_acls
        request = DeleteAclsRequest(filters=(DeleteAclsFilter(**any_filter),))
    else:
        ok = AclCreation(resource_type=i8(2), resource_name="t", resource_pattern_type=i8(3),
                         principal="User:carol", host="*", operation=i8(4),
                         permission_type=i8(3))  # fmt: skip
        deny = dataclasses.replace(ok, permission_type=i8(2))
        handler, request = acls.create_acls, CreateAclsRequest(creations=(ok, deny))
    return [handler(s, root, request), handler(with_acls, nobody, request),
            handler(with_acls, root, request)]  # fmt: skip


async def quota_answers(api: ApiKey, s: Services, version: int) -> list[Any]:
    """The client quota APIs with some set, and with errors."""
    from kop.api import quotas
    from kop.security.principal import Principal

    root = RequestContext(NS, "test", version, principal=Principal("root", NS, "PLAIN"))
    user = (AlterEntity(entity_type="user", entity_name="alice"),)
    anyone = (AlterEntity(entity_type="client-id", entity_name=None),)
    alter = AlterClientQuotasRequest(validate_only=False, entries=(
        AlterEntry(entity=user, ops=(OpData(key="producer_byte_rate", value=f64(1024.0),
                                            remove=False),)),
        AlterEntry(entity=anyone, ops=(OpData(key="nonsense", value=f64(1.0), remove=False),)),
    ))  # fmt: skip
    if api == ApiKey.ALTER_CLIENT_QUOTAS:
        return [quotas.alter(s, root, alter)]
    await quotas.alter(s, root, alter)  # then: one entity to describe
    every = DescribeClientQuotasRequest(
        components=(ComponentData(entity_type="user", match_type=i8(2), match=None),), strict=False
    )
    bad = DescribeClientQuotasRequest(
        components=(ComponentData(entity_type="user", match_type=i8(7), match=None),), strict=True
    )
    return [quotas.describe(s, root, every), quotas.describe(s, root, bad)]


async def scram_answers(api: ApiKey, s: Services, version: int) -> list[Any]:
    """The SCRAM credential APIs without users, with users and with errors."""
    from kop.api import scram
    from kop.security.principal import Principal

    root = RequestContext(NS, "test", version, principal=Principal("root", NS, "PLAIN"))
    upsert = ScramCredentialUpsertion(
        name="u", mechanism=i8(2), iterations=i32(4096), salt=b"s", salted_password=b"p"
    )
    few = dataclasses.replace(upsert, name="few", iterations=i32(1))
    alter = AlterUserScramCredentialsRequest(
        deletions=(ScramCredentialDeletion(name="gone", mechanism=i8(1)),),
        upsertions=(upsert, few),
    )
    if api == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        return [scram.alter(s, root, alter)]
    asked = DescribeUserScramCredentialsRequest(users=(UserName(name="u"), UserName(name="nope")))
    without = scram.describe(s, root, DescribeUserScramCredentialsRequest(users=None))
    described = [await without]
    await scram.alter(s, root, alter)  # then: one user to describe
    return [*described, scram.describe(s, root, asked)]


TOPIC_ADMIN_APIS = (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS,
                    ApiKey.DELETE_RECORDS)  # fmt: skip


def topic_admin_answers(s: Services, ctx: RequestContext, api: ApiKey) -> list[Any]:
    """CreateTopics, DeleteTopics (v1-5 through the route's reshape), CreatePartitions
    and DeleteRecords, over their success and error paths."""
    from kio.schema.create_partitions.v3.request import (
        CreatePartitionsAssignment,
        CreatePartitionsRequest,
        CreatePartitionsTopic,
    )
    from kio.schema.create_topics.v7.request import (
        CreatableTopic,
        CreatableTopicConfig,
        CreateTopicsRequest,
    )
    from kio.schema.delete_records.v2.request import (
        DeleteRecordsPartition,
        DeleteRecordsRequest,
        DeleteRecordsTopic,
    )
    from kio.schema.delete_records.v2.response import (
        DeleteRecordsResponse,
        DeleteRecordsTopicResult,
    )
    from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
    from kio.static.primitive import i16, i32Timedelta

    timeout = i32Timedelta.parse(datetime.timedelta(seconds=1))
    version = ctx.api_version
    if api == ApiKey.CREATE_TOPICS:
        config = CreatableTopicConfig(name="retention.ms", value="1000")

        def topic(name: str, count: int = 3, configs: tuple[CreatableTopicConfig, ...] = ()) -> Any:
            return CreatableTopic(name=TopicName(name), assignments=(), num_partitions=i32(count),
                                  replication_factor=i16(-1), configs=configs)  # fmt: skip

        topics = (topic("new", configs=(config,)), topic("new"), topic("t"), topic("z", count=0))
        return [
            topics_admin.create_topics(s, ctx, CreateTopicsRequest(topics=topics)),
            topics_admin.create_topics(
                s, ctx, CreateTopicsRequest(topics=(topic("v"),), validate_only=True)
            ),
        ]
    if api == ApiKey.DELETE_TOPICS:
        route = ROUTES[api]
        names = (TopicName("t"), TopicName("gone"))
        if version < 6:  # the version's own shape, through the route's reshape
            body = request_schema(api, version)(topic_names=names, timeout=timeout)
        else:
            states = tuple(DeleteTopicState(name=n, topic_id=None) for n in names)
            body = DeleteTopicsRequest(topics=states, timeout=timeout)
        calls = [topics_admin.delete_topics(s, ctx, route.read(body, version))]
        if version >= 6:  # deleting by topic id (name null) exists from v6
            by_id = (DeleteTopicState(name=None, topic_id=None),
                     DeleteTopicState(name=TopicName("x"), topic_id=None))  # fmt: skip
            calls.append(
                topics_admin.delete_topics(
                    s, ctx, DeleteTopicsRequest(topics=by_id, timeout=timeout)
                )
            )
        return calls
    if api == ApiKey.CREATE_PARTITIONS:

        def grow(count: int, assignments: tuple[tuple[int, ...], ...] | None = None) -> Any:
            return CreatePartitionsTopic(
                name=TopicName("t"), count=i32(count), assignments=None if assignments is None
                else tuple(CreatePartitionsAssignment(broker_ids=tuple(BrokerId(b) for b in a))
                           for a in assignments),
            )  # fmt: skip

        return [
            topics_admin.create_partitions(s, ctx, CreatePartitionsRequest(
                topics=(grow(4), grow(1)), timeout=timeout, validate_only=True)),
            topics_admin.create_partitions(s, ctx, CreatePartitionsRequest(
                topics=(grow(4, ((1,),)),), timeout=timeout, validate_only=False)),
        ]  # fmt: skip
    parts = (DeleteRecordsPartition(partition_index=i32(0), offset=i64(4)),
             DeleteRecordsPartition(partition_index=i32(5), offset=i64(-1)))  # fmt: skip
    named = tuple(DeleteRecordsTopic(name=TopicName(n), partitions=parts) for n in ("t", "gone"))
    request = DeleteRecordsRequest(topics=named, timeout=timeout)
    ok = delete_records._part(0, ErrorCode.none, 4)
    return [
        delete_records.handle(s, ctx, request),
        _resolved(DeleteRecordsResponse(throttle_time=NO_THROTTLE, topics=(
            DeleteRecordsTopicResult(name=TopicName("t"), partitions=(ok,)),))),
    ]  # fmt: skip


CONFIG_APIS = (ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS)


def config_answers(s: Services, ctx: RequestContext, api: ApiKey) -> list[Any]:
    """DescribeConfigs of a topic, a missing one, the broker and an unknown resource
    type; AlterConfigs and IncrementalAlterConfigs accepted and refused."""
    from kio.schema.alter_configs.v2 import request as alter
    from kio.schema.describe_configs.v4.request import (
        DescribeConfigsRequest,
        DescribeConfigsResource,
    )
    from kio.schema.incremental_alter_configs.v1 import request as incremental

    topic, broker = i8(configs.TOPIC), i8(configs.BROKER)
    if api == ApiKey.DESCRIBE_CONFIGS:
        resources = (
            DescribeConfigsResource(resource_type=topic, resource_name="t",
                                    configuration_keys=None),
            DescribeConfigsResource(resource_type=topic, resource_name="gone",
                                    configuration_keys=None),
            DescribeConfigsResource(resource_type=broker, resource_name="1",
                                    configuration_keys=("broker.id",)),
            DescribeConfigsResource(resource_type=i8(99), resource_name="?",
                                    configuration_keys=None),
        )  # fmt: skip
        return [
            configs.handle(s, ctx, DescribeConfigsRequest(resources=resources)),
            configs.handle(
                s, ctx, DescribeConfigsRequest(resources=resources[:1], include_synonyms=True)
            ),
            configs.handle(
                s, ctx, DescribeConfigsRequest(resources=resources[:1], include_documentation=True)
            ),
        ]
    if api == ApiKey.ALTER_CONFIGS:
        res = (
            alter.AlterConfigsResource(resource_type=topic, resource_name="t",
                configs=(alter.AlterableConfig(name="retention.ms", value="60000"),)),
            alter.AlterConfigsResource(resource_type=topic, resource_name="t",
                configs=(alter.AlterableConfig(name="no.such.config", value="1"),)),
            alter.AlterConfigsResource(resource_type=broker, resource_name="1", configs=()),
        )  # fmt: skip
        request = alter.AlterConfigsRequest(resources=res, validate_only=False)
        return [alter_configs.alter_configs(s, ctx, request)]
    unset = incremental.AlterableConfig(name="retention.ms", config_operation=i8(1), value=None)
    changes = (
        incremental.AlterConfigsResource(resource_type=topic, resource_name="t", configs=(unset,)),
        incremental.AlterConfigsResource(resource_type=topic, resource_name="gone", configs=()),
    )
    request = incremental.IncrementalAlterConfigsRequest(resources=changes, validate_only=True)
    return [alter_configs.incremental_alter_configs(s, ctx, request)]


REPLICA_APIS = (ApiKey.DESCRIBE_LOG_DIRS, ApiKey.ELECT_LEADERS,
                ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS,
                ApiKey.ALTER_REPLICA_LOG_DIRS, ApiKey.DESCRIBE_TOPIC_PARTITIONS)  # fmt: skip


def replica_answers(s: Services, ctx: RequestContext, api: ApiKey) -> list[Any]:
    """The log-dir and replica-management APIs, and DescribeTopicPartitions; the first
    two also for a principal refused cluster operations (a top-level error code that
    old versions lack)."""
    from kio.schema.alter_partition_reassignments.v1.request import (
        AlterPartitionReassignmentsRequest,
        ReassignablePartition,
        ReassignableTopic,
    )
    from kio.schema.alter_replica_log_dirs.v2.request import (
        AlterReplicaLogDir,
        AlterReplicaLogDirsRequest,
        AlterReplicaLogDirTopic,
    )
    from kio.schema.describe_log_dirs.v4.request import (
        DescribableLogDirTopic,
        DescribeLogDirsRequest,
    )
    from kio.schema.describe_topic_partitions.v0.request import (
        Cursor,
        DescribeTopicPartitionsRequest,
        TopicRequest,
    )
    from kio.schema.elect_leaders.v2.request import ElectLeadersRequest, TopicPartitions
    from kio.schema.list_partition_reassignments.v0.request import (
        ListPartitionReassignmentsRequest,
    )

    from kop.security.authorizer import DENY_ALL

    refused = dataclasses.replace(ctx, access=DENY_ALL)

    def indexes(*ids: int) -> tuple[i32, ...]:
        return tuple(i32(i) for i in ids)

    if api == ApiKey.DESCRIBE_LOG_DIRS:
        asked = (
            DescribableLogDirTopic(topic=TopicName("t"), partitions=indexes(0, 1, 7)),
            DescribableLogDirTopic(topic=TopicName("gone"), partitions=indexes(0)),
        )
        return [
            log_dirs.handle(s, ctx, DescribeLogDirsRequest(topics=None)),
            log_dirs.handle(s, ctx, DescribeLogDirsRequest(topics=asked)),
            log_dirs.handle(s, refused, DescribeLogDirsRequest(topics=asked)),
        ]
    if api == ApiKey.ELECT_LEADERS:
        named = (TopicPartitions(topic=TopicName("t"), partitions=indexes(0, 7)),
                 TopicPartitions(topic=TopicName("gone"), partitions=indexes(0)))  # fmt: skip
        every = ElectLeadersRequest(election_type=i8(0), topic_partitions=None)
        some = ElectLeadersRequest(election_type=i8(0), topic_partitions=named)
        return [
            replicas.elect_leaders(s, ctx, some),
            replicas.elect_leaders(s, ctx, every),
            replicas.elect_leaders(s, refused, some),
        ]
    if api == ApiKey.ALTER_PARTITION_REASSIGNMENTS:

        def move(index: int, to: tuple[int, ...] | None) -> ReassignablePartition:
            return ReassignablePartition(
                partition_index=i32(index),
                replicas=None if to is None else tuple(BrokerId(b) for b in to),
            )

        moves = (move(0, (0,)), move(0, (3,)), move(0, None), move(9, (0,)))
        topics = (ReassignableTopic(name=TopicName("t"), partitions=moves),
                  ReassignableTopic(name=TopicName("gone"), partitions=moves[:1]))  # fmt: skip
        request = AlterPartitionReassignmentsRequest(topics=topics)
        return [
            replicas.alter_partition_reassignments(s, ctx, request),
            replicas.alter_partition_reassignments(s, refused, request),
        ]
    if api == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        request = ListPartitionReassignmentsRequest(topics=None)
        return [
            replicas.list_partition_reassignments(s, ctx, request),
            replicas.list_partition_reassignments(s, refused, request),
        ]
    if api == ApiKey.ALTER_REPLICA_LOG_DIRS:
        dirs = (
            AlterReplicaLogDir(path="pulsar://public/default", topics=(
                AlterReplicaLogDirTopic(name=TopicName("t"), partitions=indexes(0, 9)),)),
            AlterReplicaLogDir(path="/data", topics=(
                AlterReplicaLogDirTopic(name=TopicName("gone"), partitions=indexes(0)),)),
        )  # fmt: skip
        request = AlterReplicaLogDirsRequest(dirs=dirs)
        return [
            replicas.alter_replica_log_dirs(s, ctx, request),
            replicas.alter_replica_log_dirs(s, refused, request),
        ]
    names = (TopicRequest(name=TopicName("t")), TopicRequest(name=TopicName("gone")))
    resume = Cursor(topic_name=TopicName("t"), partition_index=i32(1))
    return [
        topic_partitions.handle(s, ctx, DescribeTopicPartitionsRequest(
            topics=names, response_partition_limit=i32(1), cursor=None)),
        topic_partitions.handle(s, ctx, DescribeTopicPartitionsRequest(
            topics=names, response_partition_limit=i32(10), cursor=resume)),
    ]  # fmt: skip
