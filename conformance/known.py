"""Differences between kop and Kafka that are understood, each with its reason.
Keyed by (scenario, client) or (scenario, "*") for every client. A listed
difference that no longer shows up is reported as stale, so this list stays true."""

from __future__ import annotations

KNOWN: dict[tuple[str, str], str] = {}
