"""How a group's mirrored subscription is named: the group id behind a prefix of
its own, so kop never moves or deletes a Pulsar application's subscription that
happens to share a group's name (kop touches only names with the prefix)."""

from __future__ import annotations

import re

DEFAULT_PREFIX = "kafka-group-"

# Letters, digits and `._-:=`: safe in every Pulsar tool's command line and URL.
_LEGAL = re.compile(r"^[A-Za-z0-9._:=-]{1,64}$")
# Cursors Pulsar names itself: the compactor's (`__compaction`), deduplication's
# (`pulsar.dedup`), geo-replication's (`pulsar.repl.*`).
_PULSARS_OWN = ("__", "pulsar.")


def check_prefix(prefix: str) -> str:
    """The prefix, or ValueError saying why Pulsar or kop's promise would break."""
    if not _LEGAL.match(prefix):
        raise ValueError("must be 1 to 64 of the characters A-Z a-z 0-9 . _ : = -")
    if prefix.startswith(_PULSARS_OWN):
        raise ValueError(f"must not start with {' or '.join(_PULSARS_OWN)} (Pulsar's own cursors)")
    return prefix


class SubscriptionNames:
    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        self.prefix = check_prefix(prefix)

    def of(self, group: str) -> str:
        return self.prefix + group

    def group_of(self, subscription: str) -> str | None:
        """The group a subscription mirrors, None when the name is not kop's."""
        if not subscription.startswith(self.prefix):
            return None
        return subscription[len(self.prefix) :]
