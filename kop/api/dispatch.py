"""API key -> handler: the typed routes (kop/api/routes.py), and the handlers still
answering with version-agnostic mappings (`build`), which leave one by one (issue 35)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kop.api import (
    acls,
    alter_configs,
    api_versions,
    configs,
    delete_records,
    fetch,
    groups,
    leader_epochs,
    list_offsets,
    log_dirs,
    metadata,
    offsets,
    produce,
    producer_ids,
    quotas,
    replicas,
    sasl,
    scram,
    topic_partitions,
    topics_admin,
    transactions,
    txn_admin,
    txn_offsets,
)
from kop.api.context import HandlerResult, RequestContext, Services
from kop.api.routes import Route
from kop.protocol.messages import ApiKey

Handler = Callable[[Services, RequestContext, Any], Awaitable[HandlerResult]]

# Each typed module names its routes (`ROUTES`) beside its handlers.
ROUTES: dict[ApiKey, Route[Any, Any]] = {
    r.api: r
    for module in (list_offsets, leader_epochs, acls, scram, quotas, metadata, api_versions)
    for r in module.ROUTES
}

HANDLERS: dict[ApiKey, Handler] = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.SASL_HANDSHAKE: sasl.handshake,
    ApiKey.SASL_AUTHENTICATE: sasl.authenticate,
    ApiKey.CREATE_TOPICS: topics_admin.create_topics,
    ApiKey.DELETE_TOPICS: topics_admin.delete_topics,
    ApiKey.DELETE_RECORDS: delete_records.handle,
    ApiKey.INIT_PRODUCER_ID: producer_ids.handle,
    ApiKey.ADD_PARTITIONS_TO_TXN: transactions.add_partitions,
    ApiKey.ADD_OFFSETS_TO_TXN: txn_offsets.add_offsets,
    ApiKey.END_TXN: transactions.end_txn,
    ApiKey.TXN_OFFSET_COMMIT: txn_offsets.txn_offset_commit,
    ApiKey.WRITE_TXN_MARKERS: txn_admin.write_txn_markers,
    ApiKey.DESCRIBE_PRODUCERS: txn_admin.describe_producers,
    ApiKey.DESCRIBE_TRANSACTIONS: txn_admin.describe_transactions,
    ApiKey.LIST_TRANSACTIONS: txn_admin.list_transactions,
    ApiKey.DESCRIBE_CONFIGS: configs.handle,
    ApiKey.ALTER_CONFIGS: alter_configs.alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: alter_configs.incremental_alter_configs,
    ApiKey.CREATE_PARTITIONS: topics_admin.create_partitions,
    ApiKey.FIND_COORDINATOR: groups.find_coordinator,
    ApiKey.JOIN_GROUP: groups.join_group,
    ApiKey.SYNC_GROUP: groups.sync_group,
    ApiKey.HEARTBEAT: groups.heartbeat,
    ApiKey.LEAVE_GROUP: groups.leave_group,
    ApiKey.DESCRIBE_GROUPS: groups.describe_groups,
    ApiKey.LIST_GROUPS: groups.list_groups,
    ApiKey.DELETE_GROUPS: groups.delete_groups,
    ApiKey.OFFSET_COMMIT: offsets.offset_commit,
    ApiKey.OFFSET_FETCH: offsets.offset_fetch,
    ApiKey.OFFSET_DELETE: offsets.offset_delete,
    ApiKey.DESCRIBE_LOG_DIRS: log_dirs.handle,
    ApiKey.ALTER_REPLICA_LOG_DIRS: replicas.alter_replica_log_dirs,
    ApiKey.ELECT_LEADERS: replicas.elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: replicas.alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: replicas.list_partition_reassignments,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: topic_partitions.handle,
    **{api: route.run for api, route in ROUTES.items()},
}
