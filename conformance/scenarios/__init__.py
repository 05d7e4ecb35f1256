"""The catalogue: importing this package registers every scenario."""

from conformance.scenarios import (  # noqa: F401
    admin,
    apps,
    bad_input,
    compaction,
    compaction_cleaned,
    epochs,
    fetch,
    groups,
    internal,
    old_produce,
    positions,
    produce,
    security,
    share_groups,
    tools,
    transactions,
)
