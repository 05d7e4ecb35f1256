"""What the kop target asks Pulsar's admin REST to make compaction show on demand:
whether kop's compaction cycle has noted a partition's survivors, then retention
(unload, then truncate), as tests/integration/test_compacted_topics.py does it."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from typing import Any

# kop's durable subscription that keeps what its compaction cycle has not noted
# (kop/pulsar/compaction.py): placed at the horizon, the last entry, once all is noted.
PIN = "kop-compaction"
COMPACTOR = "__compaction"  # Pulsar's: marks the last entry its last compaction covered


def noted(stats: dict[str, Any]) -> bool:
    """From a partition's internal stats: Pulsar compacted up to the last entry (its
    `__compaction` cursor marks the horizon) and kop noted the survivors (its pin was
    placed at that entry). Both, since a truncate moves every cursor to the end: the
    pin alone then looks placed at the next entry written, before any compaction."""
    last, cursors = stats.get("lastConfirmedEntry"), stats.get("cursors", {})
    pin, pulsar = cursors.get(PIN, {}), cursors.get(COMPACTOR, {})
    return bool(pin.get("readPosition") == last == pulsar.get("markDeletePosition"))


class PulsarPartition:
    """One partition of a Kafka topic in kop's namespace (KOP_TENANT/KOP_NAMESPACE)."""

    def __init__(self, topic: str, partition: int) -> None:
        http = os.environ.get("KOP_PULSAR_HTTP_URL", "http://localhost:8080").split(",")[0]
        tenant = os.environ.get("KOP_TENANT", "public")
        ns = f"{tenant}/{os.environ.get('KOP_NAMESPACE', 'default')}"
        self._base = f"{http.rstrip('/')}/admin/v2/persistent/{ns}/{topic}-partition-{partition}"

    def _call(self, method: str, path: str) -> Any:
        req = urllib.request.Request(f"{self._base}/{path}", method=method)
        with urllib.request.urlopen(req, timeout=120) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def noted(self) -> bool:
        return noted(self._call("GET", "internalStats"))

    def delete_live_ledgers(self) -> None:
        """Retention, on demand: close the current ledger (unload), then delete every
        closed ledger (truncate). Only the compacted ledger keeps the old records."""
        self._call("PUT", "unload")
        self._call("DELETE", "truncate")

    def wait_noted(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.noted():
            if time.monotonic() > deadline:
                raise TimeoutError(f"kop did not note {self._base} in {timeout_s:.0f} s")
            time.sleep(0.2)
