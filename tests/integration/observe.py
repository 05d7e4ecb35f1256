"""What kop and Pulsar say about a partition, for integration tests: kop's admin
HTTP (`/v1/topics`, `/metrics`) and Pulsar's admin REST (internal stats, unload,
truncate, namespace policies), plus waits on a condition under a deadline."""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from tests.integration.conftest import PULSAR_HTTP, KopProcess

# -- kop's admin HTTP ------------------------------------------------------------------


def _kop_get(gateway: KopProcess, path: str) -> bytes:
    url = f"http://127.0.0.1:{gateway.admin_port}{path}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        return bytes(resp.read())


def partition_state(gateway: KopProcess, topic: str) -> dict[str, Any]:
    """The gateway's view of partition 0 of `topic` (admin `GET /v1/topics`);
    {} while the gateway does not own it. `topic` is the local name (the last
    part of a full Pulsar name)."""
    partitions = json.loads(_kop_get(gateway, "/v1/topics"))["partitions"]
    for name, state in partitions.items():
        if name.endswith(f"/{topic}-partition-0"):
            return dict(state)
    return {}


def wait_for_partition(
    gateway: KopProcess,
    topic: str,
    condition: Callable[[dict[str, Any]], bool],
    what: str,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Polls `/v1/topics` until `condition` holds for partition 0 of `topic`; fails
    naming `what`, the last state seen and the end of kop's log after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition(state := partition_state(gateway, topic)):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what}: not within {timeout}s; kop reports {state}\n"
                f"kop log tail:\n{gateway.log_text()[-3000:]}"
            )
        time.sleep(0.1)
    return state


def metric(gateway: KopProcess, name: str) -> float | None:
    """The value of an unlabelled sample of kop's `/metrics`, or None if absent."""
    text = _kop_get(gateway, "/metrics").decode()
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


# -- Pulsar's admin REST ---------------------------------------------------------------


def pulsar_rest(method: str, path: str, body: Any = None, timeout: float = 60.0) -> Any:
    """`method /admin/v2/{path}` on the shared Pulsar; the decoded JSON answer, or None."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{PULSAR_HTTP}/admin/v2/{path}",
        method=method,
        data=data,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


@contextlib.contextmanager
def dedup_namespace(prefix: str) -> Iterator[str]:
    """A namespace of its own with deduplication on, as kop sets up the ones it writes
    into; its topics (partitioned or not) and itself are deleted after."""
    ns = f"public/{prefix}-{uuid.uuid4().hex[:10]}"
    pulsar_rest("PUT", f"namespaces/{ns}", {})
    pulsar_rest("POST", f"namespaces/{ns}/deduplication", True)
    yield ns
    with contextlib.suppress(urllib.error.URLError):
        for name in pulsar_rest("GET", f"persistent/{ns}/partitioned") or []:
            local = name.rsplit("/", 1)[1]
            pulsar_rest("DELETE", f"persistent/{ns}/{local}/partitions?force=true")
        for name in pulsar_rest("GET", f"persistent/{ns}") or []:
            local = name.rsplit("/", 1)[1]
            if "-partition-" not in local:
                pulsar_rest("DELETE", f"persistent/{ns}/{local}?force=true")
        pulsar_rest("DELETE", f"namespaces/{ns}")  # (forced deletion is off)


def partition_path(topic: str, namespace: str = "public/default") -> str:
    return f"persistent/{namespace}/{topic}-partition-0"


def internal_stats(topic: str, namespace: str = "public/default") -> dict[str, Any]:
    """Pulsar's managed-ledger view of partition 0 (loads the topic if it is not)."""
    return dict(pulsar_rest("GET", f"{partition_path(topic, namespace)}/internalStats"))


def ledgers(topic: str, namespace: str = "public/default") -> list[tuple[int, int]]:
    """(ledger id, entries) of partition 0, oldest first. The last one is the ledger
    Pulsar writes into: internal stats list it with 0 entries and count its entries
    in `currentLedgerEntries`, which this reports instead."""
    stats = internal_stats(topic, namespace)
    out = [(int(led["ledgerId"]), int(led["entries"])) for led in stats["ledgers"]]
    if out:
        out[-1] = (out[-1][0], int(stats["currentLedgerEntries"]))
    return out


def unload(topic: str, namespace: str = "public/default") -> None:
    """Closes partition 0's current ledger; the next use opens a new one."""
    pulsar_rest("PUT", f"{partition_path(topic, namespace)}/unload")


def truncate(topic: str, namespace: str = "public/default") -> None:
    """Moves every cursor of partition 0 to its end and deletes its closed ledgers."""
    pulsar_rest("DELETE", f"{partition_path(topic, namespace)}/truncate")
