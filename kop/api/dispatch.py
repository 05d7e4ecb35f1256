"""API key -> route: every API kop serves but SASL (the connection's gate answers those)
is a typed route (kop/api/routes.py), listed by the module that handles it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kop.api import (
    acls,
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
    quotas,
    replicas,
    scram,
    share_fetch,
    share_groups,
    share_offsets,
    topic_partitions,
    topics_admin,
    transactions,
    txn_admin,
    txn_offsets,
)
from kop.api.routes import Route
from kop.protocol.messages import ApiKey

# Each module names its routes (`ROUTES`) beside its handlers.
ROUTES: Mapping[ApiKey, Route[Any, Any]] = {
    r.api: r
    for module in (
        produce,
        fetch,
        list_offsets,
        leader_epochs,
        topics_admin,
        configs,
        alter_configs,
        delete_records,
        log_dirs,
        replicas,
        topic_partitions,
        find_coordinator,
        groups,
        group_admin,
        consumer_groups,
        share_groups,
        share_offsets,
        share_fetch,
        offsets,
        offset_fetch,
        producer_ids,
        transactions,
        txn_offsets,
        txn_admin,
        acls,
        scram,
        quotas,
        metadata,
        api_versions,
    )
    for r in module.ROUTES
}
