"""The consumer groups of one instance, wired from the configuration (composition):
the offsets topic, the coordinator, the subscription mirror, and what a deletion
elsewhere tells them."""

from __future__ import annotations

from kop.cluster.epochs import LeaderEpochs
from kop.cluster.ownership import Ownership
from kop.config.settings import KopConfig
from kop.groups.consumer.coordinator import ConsumerSettings
from kop.groups.coordinator import Limits as GroupLimits
from kop.groups.mirror import SubscriptionMirror
from kop.groups.mirror_names import SubscriptionNames
from kop.groups.offsets_store import OffsetsStore
from kop.groups.scope import GroupScope
from kop.groups.service import GroupService
from kop.groups.share.coordinator import ShareSettings
from kop.groups.topic_deletion import DeletionFollower
from kop.partitions.manager import LogManager
from kop.storage.group_configs import GroupConfigStore
from kop.storage.naming import Namespace, PulsarTopic
from kop.storage.port import MessageLog, StorageAdmin
from kop.storage.types import AdminError
from kop.topics.catalog import TopicCatalog

OFFSETS_STATE_TOPIC = "consumer-offsets"  # in the system namespace


def group_limits(c: KopConfig) -> GroupLimits:
    return GroupLimits(
        min_session_timeout_ms=c.group_min_session_timeout_ms,
        max_session_timeout_ms=c.group_max_session_timeout_ms,
        initial_rebalance_delay_ms=c.group_initial_rebalance_delay_ms,
        max_size=c.group_max_size,
        max_groups=c.max_groups,
        max_groups_per_tenant=c.max_groups_per_tenant,
        default_tenant=c.tenant,
    )


def consumer_settings(c: KopConfig) -> ConsumerSettings:
    """The KIP-848 settings (the assignors' names were checked with the configuration)."""
    return ConsumerSettings(
        session_timeout_ms=c.group_consumer_session_timeout_ms,
        heartbeat_interval_ms=c.group_consumer_heartbeat_interval_ms,
        max_size=c.group_consumer_max_size,
        assignors=tuple(c.group_consumer_assignors.split(",")),
        default_tenant=c.tenant,
        migration_policy=c.group_consumer_migration_policy,
    )


def share_settings(c: KopConfig) -> ShareSettings:
    return ShareSettings(
        session_timeout_ms=c.group_share_session_timeout_ms,
        heartbeat_interval_ms=c.group_share_heartbeat_interval_ms,
        max_size=c.group_share_max_size,
        record_lock_duration_ms=c.group_share_record_lock_duration_ms,
        delivery_count_limit=c.group_share_delivery_count_limit,
        partition_max_record_locks=c.group_share_partition_max_record_locks,
        max_share_sessions=c.group_share_max_share_sessions,
        auto_offset_reset_earliest=c.share_auto_offset_reset == "earliest",
        default_tenant=c.tenant,
    )


async def system_topic(
    admin: StorageAdmin, c: KopConfig, name: str, partitions: int
) -> PulsarTopic:
    """A partitioned topic of the system namespace, created on the first start."""
    tenant, namespace = c.system_namespace.split("/")
    topic = PulsarTopic(Namespace(tenant, namespace), name, name)
    if await admin.topic_info(topic) is None:
        try:
            await admin.create_partitioned(topic, partitions, {})
        except AdminError as exc:
            if exc.status != 409:  # another instance starting beside this one made it
                raise
    return topic


async def start_groups(
    c: KopConfig,
    admin: StorageAdmin,
    storage: MessageLog,
    logs: LogManager,
    catalog: TopicCatalog,
    ownership: Ownership,
    epochs: LeaderEpochs,
    configs: GroupConfigStore,
) -> GroupService:
    """The offsets topic (created partitioned on first start) and the coordinator,
    which loads it in the background and answers COORDINATOR_LOAD_IN_PROGRESS
    until done."""
    topic = await system_topic(admin, c, OFFSETS_STATE_TOPIC, c.offsets_topic_partitions)
    store = OffsetsStore(storage, topic.full, c.offsets_topic_partitions)
    scope = GroupScope(Namespace(c.tenant, c.namespace))
    mirror = None
    if c.mirror_subscriptions:
        names = SubscriptionNames(c.group_subscription_prefix)
        mirror = SubscriptionMirror(admin, logs, catalog, scope, c.mirror_interval_s, names=names)
    groups = GroupService(
        store, group_limits(c), c.offsets_retention_minutes * 60_000, mirror=mirror,
        ownership=ownership, scope=scope, consumer=consumer_settings(c), share=share_settings(c),
        configs=configs,
    )  # fmt: skip
    epochs.on_deleted = DeletionFollower(groups, logs).deleted  # deletions by any instance
    await groups.start()
    return groups
