"""What `bench.compacted` asks Pulsar's admin REST and kop's metrics: whether kop has
noted a partition's survivors, and retention on demand (unload, then truncate), as
tests/integration/test_compacted_topics.py does it."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from typing import Any

from bench.common import log

# kop's durable subscription that keeps what its compaction cycle has not noted
# (kop/pulsar/compaction.py): it sits on the last entry once everything is noted.
PIN = "kop-compaction"


class PulsarPartition:
    """Partition 0 of a topic in public/default, through Pulsar's admin REST."""

    def __init__(self, http_url: str, topic: str) -> None:
        self._base = f"{http_url}/admin/v2/persistent/public/default/{topic}-partition-0"

    def _call(self, method: str, path: str) -> Any:
        req = urllib.request.Request(f"{self._base}/{path}", method=method)
        with urllib.request.urlopen(req, timeout=120) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def internal_stats(self) -> dict[str, Any]:
        return dict(self._call("GET", "internalStats"))

    def noted(self) -> bool:
        """kop's compaction cycle has noted every entry: its pin reads the last one."""
        stats = self.internal_stats()
        pin = stats.get("cursors", {}).get(PIN)
        return pin is not None and pin.get("readPosition") == stats.get("lastConfirmedEntry")

    def compacted_ledger_bytes(self) -> int:
        return int(self.internal_stats().get("compactedLedger", {}).get("size", 0))

    def live_entries(self) -> int:
        stats = self.internal_stats()
        return int(stats.get("numberOfEntries", 0))

    def delete_live_ledgers(self) -> None:
        """Retention, on demand: close the current ledger (unload), then delete every
        closed ledger (truncate). Only the compacted ledger keeps the old records."""
        self._call("PUT", "unload")
        self._call("DELETE", "truncate")


def wait_until(what: str, check: Any, timeout_s: float, every_s: float = 0.5) -> float:
    """Poll `check` until it holds; seconds it took. Raises after `timeout_s`."""
    start = time.perf_counter()
    while not check():
        if time.perf_counter() - start > timeout_s:
            raise RuntimeError(f"not {what} within {timeout_s:.0f} s")
        time.sleep(every_s)
    took = time.perf_counter() - start
    log(f"  {what} after {took:.1f} s")
    return took


def kop_metric(admin_port: int, name: str) -> float:
    """An unlabelled sample of kop's /metrics (0 when absent)."""
    url = f"http://127.0.0.1:{admin_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0
