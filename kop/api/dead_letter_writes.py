"""Where a share group's dead letters are written (kop.groups.share.dead_letters):
the topic Kafka's rules allow, through the leader of its partition, as a produce.

Kafka's checks come first, in its order and words (KIP-1191): the name must not start
with `__`; a topic that exists takes letters only if its own
`errors.deadletterqueue.group.enable` is true (its owner decides, not the group's);
one that does not exist is created only if the cluster's
`errors_deadletterqueue_auto_create_topics_enable` says so (with that config set);
the name must start with `errors_deadletterqueue_topic_name_prefix` (`dlq.`) unless
that is empty. The topic is in the group's namespace: a group's letters never reach
another tenant.

The letters go to partition `source partition % partitions` as one Produce (acks=all):
handled here when this instance leads that partition, else sent to the instance that
does over the instances' own connections (kop.sasl.peer_client), whose Produce takes
a proven instance's write as kop's own. A retriable refusal (the leader moving, Pulsar
slow, Pulsar's admin away) is tried again a few times, within 5 s in all, then given up
(the records are archived anyway, as Kafka archives them when its writes fail).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from dataclasses import dataclass
from typing import cast

from kio.schema.produce.v12.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.produce.v12.response import ProduceResponse
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from kop.api import produce
from kop.api.context import RequestContext, Services
from kop.groups.share.dead_letters import DeadLetterError, DeadLetters
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import build_batch
from kop.sasl.peer_client import PeerClient, PeerUnreachable
from kop.storage.naming import InvalidTopicName, PulsarTopic, resolve
from kop.storage.types import AdminError, StorageError
from kop.topics.catalog import TopicView
from kop.topics.configs import DLQ_ENABLE

log = logging.getLogger(__name__)

ATTEMPTS = 4
BACKOFF_S = 0.5  # doubled after each failed attempt
WRITE_WITHIN_S = 5.0  # all attempts together
TIMEOUT = datetime.timedelta(seconds=30)  # the produce's, at the leader
RETRIABLE = frozenset({
    ErrorCode.not_leader_or_follower, ErrorCode.leader_not_available,
    ErrorCode.request_timed_out, ErrorCode.kafka_storage_error,
    ErrorCode.not_enough_replicas, ErrorCode.network_exception,
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class DeadLetterRules:
    """The cluster-wide settings (kop's errors_deadletterqueue_*)."""

    prefix: str = "dlq."
    auto_create: bool = False


class DeadLetterWrites:
    """The share-partitions' DeadLetterSink on a running kop."""

    def __init__(
        self,
        services: Services,
        peers: PeerClient,
        rules: DeadLetterRules,
        backoff_s: float = BACKOFF_S,
        within_s: float = WRITE_WITHIN_S,
    ) -> None:
        self._services = services
        self._peers = peers
        self._rules = rules
        self._backoff_s = backoff_s
        self._within_s = within_s
        self.written = 0  # letters written since start (for tests and the log)

    async def write(self, letters: DeadLetters) -> None:
        """Within `WRITE_WITHIN_S` whatever is retried: the acknowledgement (or the
        expiry of locks, for every share-partition of the instance) waits on it."""
        try:
            async with asyncio.timeout(self._within_s):
                await self._attempts(letters)
        except TimeoutError:
            raise DeadLetterError(f"not written within {self._within_s} s") from None

    async def _attempts(self, letters: DeadLetters) -> None:
        delay = self._backoff_s
        for attempt in range(ATTEMPTS):
            try:
                view = await self._topic(letters)
                await self._produce(view, letters)
                self.written += len(letters.records)
                return
            except KafkaError as exc:
                if exc.code not in RETRIABLE or attempt == ATTEMPTS - 1:
                    raise DeadLetterError(f"{exc.code.name}: {exc.message or ''}") from exc
            except (PeerUnreachable, StorageError, AdminError) as exc:  # Pulsar, an instance away
                if attempt == ATTEMPTS - 1:
                    raise DeadLetterError(str(exc)) from exc
            await asyncio.sleep(delay)
            delay *= 2

    async def _topic(self, letters: DeadLetters) -> TopicView:
        """The dead-letter topic, if Kafka's rules allow it (created if missing and
        allowed); DeadLetterError with Kafka's message if not."""
        group, name = letters.policy.group_id, letters.policy.topic
        if name.startswith("__"):
            raise DeadLetterError(
                f"Configured DLQ topic name in share group: {group} cannot start with __, "
                f"topic: {name}."
            )
        ns, _ = self._services.groups.scope.split(letters.policy.group_key)
        try:
            topic = resolve(name, ns)
        except InvalidTopicName as exc:
            raise DeadLetterError(str(exc)) from exc
        if topic.namespace != ns:
            raise DeadLetterError(f"DLQ topic {name} is not in share group {group}'s namespace")
        catalog = self._services.catalog
        view = await catalog.describe(topic)
        if view is not None and view.configs.get(DLQ_ENABLE) != "true":
            raise DeadLetterError(
                f"DLQ is not enabled on configured DLQ topic for share group: {group}, "
                f"topic: {name}."
            )
        if view is None and not self._rules.auto_create:
            raise DeadLetterError(
                f"DLQ topic does not exist and auto create is disabled on cluster for share "
                f"group: {group}, topic: {name}."
            )
        prefix = self._rules.prefix
        if prefix and not name.startswith(prefix):
            raise DeadLetterError(
                f"Configured DLQ topic name does not comply with the DLQ topic prefix in share "
                f"group: {group}, topic: {name}, prefix: {prefix}."
            )
        return view if view is not None else await self._create(topic)

    async def _create(self, topic: PulsarTopic) -> TopicView:
        catalog = self._services.catalog
        try:
            # CreateTime: a letter's time is when it was written (Kafka pins it so too)
            configs = {DLQ_ENABLE: "true", "message.timestamp.type": "CreateTime"}
            return await catalog.create(topic, -1, configs)
        except KafkaError as exc:
            if exc.code != ErrorCode.topic_already_exists:
                raise
        catalog.invalidate(topic)
        view = await catalog.describe(topic)
        if view is None:
            raise KafkaError(ErrorCode.leader_not_available, f"{topic.full} is being created")
        return view

    async def _produce(self, view: TopicView, letters: DeadLetters) -> None:
        index = letters.source_partition % view.partitions
        partition = view.partition_topic(index)
        services = self._services
        leader = services.ownership.owner(partition)
        if leader is None:
            raise KafkaError(ErrorCode.leader_not_available, "no instance is alive")
        request = ProduceRequest(
            transactional_id=None, acks=i16(-1), timeout=i32Timedelta.parse(TIMEOUT),
            topic_data=(TopicProduceData(
                # the full name: any instance resolves it to the same topic
                name=TopicName(view.topic.full),
                partition_data=(
                    PartitionProduceData(
                        index=i32(index), records=cast(Records, build_batch(letters.records))
                    ),
                ),
            ),),
        )  # fmt: skip
        if leader.instance == services.ownership.me.instance:
            ctx = RequestContext(view.topic.namespace, "kop-dead-letters", 12)
            answer = await (await produce.handle(services, ctx, request)).answer
        else:
            answer = await self._peers.ask(leader, request)
        code = _code(answer)
        if code != ErrorCode.none:
            raise KafkaError(code, f"writing to {view.topic.kafka_name}-{index}")


def _code(answer: ProduceResponse | None) -> ErrorCode:
    if answer is None:
        return ErrorCode.unknown_server_error
    codes = [p.error_code for t in answer.responses for p in t.partition_responses]
    return ErrorCode(codes[0]) if codes else ErrorCode.unknown_server_error
