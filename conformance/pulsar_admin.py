"""What the kop target asks Pulsar's admin REST to make compaction show on demand:
retention (unload, then truncate), as tests/integration/test_compacted_topics.py does
it, once kop's compaction cycle noted the partition's survivors (`kop_noted`, from
kop's admin HTTP)."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from typing import Any


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

    def delete_live_ledgers(self) -> None:
        """Retention, on demand: close the current ledger (unload), then delete every
        closed ledger (truncate). Only the compacted ledger keeps the old records."""
        self._call("PUT", "unload")
        self._call("DELETE", "truncate")


def kop_noted(partitions: dict[str, dict[str, Any]], topic: str, partition: int) -> bool:
    """From kop's `/v1/topics` (of the instance that owns the partition): every record
    counted so far is noted and pinned by a compaction cycle. Only then may the live
    ledgers go; Pulsar's own cursors cannot tell (a truncate moves kop's pin to the end,
    and Pulsar's compaction ends before kop's cycle has noted its survivors)."""
    for name, state in partitions.items():
        if name.endswith(f"/{topic}-partition-{partition}"):
            hw = state.get("high_watermark", 0)
            return bool(hw > 0 and state.get("compaction_noted_offset") == hw)
    return False


def wait_kop_noted(
    admin_ports: list[int], topic: str, partition: int, timeout_s: float, token: str | None
) -> None:
    """Until one of the instances (`admin_ports`) reports the partition noted."""
    deadline = time.monotonic() + timeout_s
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    while True:
        for port in admin_ports:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/topics", headers=headers)
            with urllib.request.urlopen(req, timeout=10) as resp:
                if kop_noted(json.loads(resp.read())["partitions"], topic, partition):
                    return
        if time.monotonic() > deadline:
            raise TimeoutError(f"kop did not note {topic}[{partition}] in {timeout_s:.0f} s")
        time.sleep(0.2)
