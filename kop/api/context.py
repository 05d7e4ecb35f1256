"""What handlers share: the services below them and the connection's identity."""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field
from typing import Protocol

from kop.api.connection_ends import ConnectionEnds
from kop.api.fetch_sessions import FetchSessions
from kop.api.internal_topics import refuse_access
from kop.api.produce_order import PartitionChains
from kop.api.share_sessions import ShareSessions
from kop.cluster.member import Member
from kop.cluster.ownership import Ownership
from kop.groups.service import GroupService
from kop.groups.share.offsets import ShareOffsets
from kop.groups.share.partitions import SharePartitions
from kop.log.leader_epoch import check_current
from kop.log.partition_log import PartitionLog
from kop.partitions.manager import LogManager
from kop.protocol.batch_epochs import NO_EPOCH
from kop.protocol.errors import ErrorCode, KafkaError
from kop.quotas.book import QuotaBook
from kop.sasl.scram_users import ScramUsers
from kop.security.acl_admin import AclAdmin
from kop.security.authorizer import ALLOW_ALL, Access, TopicOp
from kop.security.principal import Principal
from kop.storage.naming import InvalidTopicName, Namespace, PulsarTopic, resolve
from kop.storage.types import AdminError, StorageError
from kop.topics.catalog import TopicCatalog, TopicView
from kop.txn.service import TxnService

log = logging.getLogger(__name__)

__all__ = ["Namespace"]  # the server names a connection's namespace through this layer


@dataclass(frozen=True, slots=True)
class Broker:
    """This instance, as Kafka clients are told of it."""

    node_id: int
    host: str
    port: int
    cluster_id: str
    listeners: tuple[tuple[str, str, int], ...] = ()  # see Member.listeners

    def member(self, instance: str = "") -> Member:
        return Member(self.node_id, self.host, self.port, instance, listeners=self.listeners)


class ProducerIdSource(Protocol):
    def next(self) -> int:
        """A producer id never handed out before (kop.txn.producer_ids claims them in
        blocks through Pulsar); raises KafkaError (retriable) while none is ready."""
        ...


class CountingIds:
    """Producer ids from a counter: for a kop without storage of its own (tests)."""

    def __init__(self) -> None:
        self._ids = itertools.count()

    def next(self) -> int:
        return next(self._ids)


@dataclass
class Services:
    """Everything a handler reaches below the api layer, every part present: the
    composition root (kop/wiring) starts each before a listener serves, and tests build
    the same over memory (tests/sim/memory_services.py). Only `acls` may be absent, and
    its absence is a state Kafka has too: no authorizer, SECURITY_DISABLED."""

    broker: Broker
    catalog: TopicCatalog
    logs: LogManager
    groups: GroupService
    txns: TxnService
    ownership: Ownership  # who leads what (alone, this instance leads everything)
    producer_ids: ProducerIdSource
    scram: ScramUsers  # SCRAM users, kept in Pulsar
    quotas: QuotaBook  # client quotas, kept in Pulsar
    auto_create_topics: bool
    fetch_max_wait_cap_ms: int
    fetch_max_bytes_cap: int
    offsets_topic_partitions: int  # listed as `__consumer_offsets`
    fetch_sessions: FetchSessions  # this instance's incremental fetch sessions (KIP-227)
    share_partitions: SharePartitions  # share groups' records of the partitions led here
    share_sessions: ShareSessions  # this instance's share sessions (KIP-932)
    share_offsets: ShareOffsets  # share groups' start offsets, each told by its leader
    acls: AclAdmin | None = None  # Kafka ACLs over Pulsar's permissions (None: no authorizer)

    def txn_partition(self, index: int) -> str:
        """The Pulsar partition of the transaction state topic whose owner coordinates
        its transactional ids."""
        return self.txns.partition_topic(index)

    def offsets_partition(self, index: int) -> str:
        """The Pulsar partition of the offsets topic whose owner coordinates its groups."""
        return self.groups.partition_topic(index)


class AnswerRoom(Protocol):
    """The server's budget for answers made and not yet sent, as one request sees it."""

    def claim(self, want: int) -> int:
        """Room for an answer of up to `want` bytes, held until the answer is sent
        (0: none now; ask again later). A later claim replaces this one."""

    def keep(self, nbytes: int) -> None:
        """Of the claim, only `nbytes` were used."""

    def freed(self) -> asyncio.Future[None]:
        """Resolved when room is next given back (a refused claim waits on it)."""


class _Unbounded:
    def claim(self, want: int) -> int:
        return want

    def freed(self) -> asyncio.Future[None]:
        return asyncio.get_running_loop().create_future()  # never refused: never waited on

    def keep(self, nbytes: int) -> None:
        return None


UNBOUNDED: AnswerRoom = _Unbounded()


@dataclass(frozen=True, slots=True)
class RequestContext:
    namespace: Namespace
    client_id: str | None
    api_version: int
    client_host: str = ""  # the peer's address as Kafka reports a member's host: "/127.0.0.1"
    answers: AnswerRoom = UNBOUNDED  # handlers outside a server (tests) need no budget
    chains: PartitionChains = field(default_factory=PartitionChains)  # the connection's
    listener: str = "PLAINTEXT"  # the listener the client came in through (its protocol)
    principal: Principal | None = None  # who the client authenticated as (None: nobody)
    access: Access = ALLOW_ALL  # what that principal may do
    system: Namespace | None = None  # kop's system namespace, closed to every client
    # The namespaces other than `namespace` this request named so far, and how many it
    # may: each costs Pulsar look-ups (its policies, its permissions) that a request
    # naming thousands of made-up namespaces would otherwise multiply.
    others: set[Namespace] = field(default_factory=set)
    max_namespaces: int = 100
    ends: ConnectionEnds = field(default_factory=ConnectionEnds)  # the connection's


def lead(services: Services, partition_topic: str) -> None:
    """Only a partition's owner serves it: anyone else answers as a Kafka broker that
    is not the leader, so the client refreshes its metadata and goes there."""
    if not services.ownership.mine(partition_topic):
        raise KafkaError(
            ErrorCode.not_leader_or_follower, f"{partition_topic} is led by another instance"
        )


def topic_for(ctx: RequestContext, name: str) -> PulsarTopic:
    """The Pulsar topic a Kafka name means; `__consumer_offsets` is not one a client
    may use (see `internal_topics`), nor is any topic of kop's system namespace."""
    refuse_access(name)
    try:
        topic = resolve(name, ctx.namespace)
    except InvalidTopicName as exc:
        raise KafkaError(ErrorCode.invalid_topic_exception, str(exc)) from exc
    refuse_system(ctx, topic.namespace, name)
    _count_namespace(ctx, topic.namespace, name)
    return topic


def _count_namespace(ctx: RequestContext, ns: Namespace, name: str) -> None:
    """A topic of one namespace more than `max_namespaces_per_request` allows is
    INVALID_REQUEST (the rest of the request is answered as usual)."""
    if ns == ctx.namespace or ns in ctx.others:
        return
    if len(ctx.others) >= ctx.max_namespaces:
        raise KafkaError(
            ErrorCode.invalid_request,
            f"{name}: a request may name topics of at most {ctx.max_namespaces} other "
            "namespaces (max_namespaces_per_request)",
        )
    ctx.others.add(ns)


def refuse_system(ctx: RequestContext, ns: Namespace, name: str) -> None:
    """kop's own state (offsets, transactions, members, index) is no client's topic,
    whoever asks and under whatever name: refused as a topic the client may not see,
    so it does not even learn that it exists (docs/security.md)."""
    if ns == ctx.system:
        raise KafkaError(ErrorCode.topic_authorization_failed, f"not authorized to access {name}")


async def permitted(ctx: RequestContext, name: str, op: TopicOp) -> PulsarTopic:
    """The topic `name` means, if the principal may `op` it. Asked before whether it
    exists: a topic the client may not touch is refused the same whether or not it
    exists (as Kafka does), so nobody learns of another tenant's topics."""
    topic = topic_for(ctx, name)
    if not await ctx.access.topic(topic, op):
        raise KafkaError(
            ErrorCode.topic_authorization_failed, f"not authorized to {op.value} {name}"
        )
    return topic


async def existing_topic(
    services: Services, ctx: RequestContext, name: str, op: TopicOp = TopicOp.DESCRIBE
) -> TopicView:
    view = await services.catalog.describe(await permitted(ctx, name, op))
    if view is None:
        raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {name!r}")
    return view


async def partition_log(
    services: Services,
    ctx: RequestContext,
    name: str,
    index: int,
    current_epoch: int = NO_EPOCH,
    op: TopicOp = TopicOp.DESCRIBE,
) -> PartitionLog:
    """The log of partition `index` of an existing topic, for a client whose metadata
    says the leader's epoch is `current_epoch` (-1: it does not say)."""
    return (await topic_partition(services, ctx, name, index, current_epoch, op))[1]


async def topic_partition(
    services: Services,
    ctx: RequestContext,
    name: str,
    index: int,
    current_epoch: int = NO_EPOCH,
    op: TopicOp = TopicOp.DESCRIBE,
) -> tuple[TopicView, PartitionLog]:
    """`partition_log` with the topic it belongs to."""
    view = await existing_topic(services, ctx, name, op)
    return view, await led_partition(services, view, name, index, current_epoch)


async def led_partition(
    services: Services, view: TopicView, name: str, index: int, current_epoch: int = NO_EPOCH
) -> PartitionLog:
    """The log of partition `index` of `view` (a topic the client may use, as it names
    it), if it has that partition and this instance leads it, at the epoch the
    client's metadata says (-1: it does not say)."""
    if not 0 <= index < view.partitions:
        raise KafkaError(ErrorCode.unknown_topic_or_partition, f"{name} has no partition {index}")
    lead(services, view.partition_topic(index))
    plog = await services.logs.of_topic(view, index)
    check_current(current_epoch, plog.leader_epoch)
    return plog


def error_of(exc: BaseException) -> tuple[ErrorCode, str]:
    """Map what can go wrong below a handler to a Kafka error code and message."""
    if isinstance(exc, KafkaError):
        return exc.code, exc.message or exc.code.name
    if isinstance(exc, StorageError):
        return ErrorCode.request_timed_out, str(exc)
    if isinstance(exc, AdminError):
        if exc.status in (401, 403):
            return ErrorCode.topic_authorization_failed, str(exc)
        if exc.status == 404:
            return ErrorCode.unknown_topic_or_partition, str(exc)
        if exc.status == 409:
            return ErrorCode.topic_already_exists, str(exc)
        return ErrorCode.unknown_server_error, str(exc)
    log.error("unexpected error, answered UNKNOWN_SERVER_ERROR", exc_info=exc)
    return ErrorCode.unknown_server_error, f"{type(exc).__name__}: {exc}"
