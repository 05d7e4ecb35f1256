"""kop turns on Pulsar's message deduplication in every namespace it writes into,
also one it did not create and reaches only through a full Pulsar topic name, and
before its first write there: kop's Pulsar producers re-send what was in flight
when a connection drops, and only deduplication keeps each record stored once
(and every later offset where the producer was told it is)."""

from __future__ import annotations

import contextlib
import urllib.error
import uuid

from tests.integration.clients import PRODUCERS, Rec, cf_consume
from tests.integration.conftest import KopProcess
from tests.integration.observe import internal_stats, pulsar_rest


def test_namespace_reached_by_full_name_gets_deduplication_before_the_first_write(
    fresh_kop: KopProcess,
) -> None:
    """The namespace and the topic are made through Pulsar's REST API only, with
    deduplication unset (the broker default, `brokerDeduplicationEnabled`, is off).

    Evidence that deduplication was on before kop's first write, not just at some
    point: Pulsar keeps a `pulsar.dedup` cursor on a topic with deduplication on. A
    cursor opened when deduplication is enabled on a topic that already holds
    entries starts at its last entry (checked by hand on Pulsar 4.0.7: three
    messages written, then deduplication enabled, gives mark-delete position `L:2`);
    enabled before any write, it is at `L:-1` of the first ledger, and stays there
    until Pulsar's first deduplication snapshot (every 1000 entries by default)."""
    namespace = f"public/kop-other-{uuid.uuid4().hex[:10]}"
    local = "records"
    full = f"persistent://{namespace}/{local}"
    pulsar_rest("PUT", f"namespaces/{namespace}", {})
    try:
        pulsar_rest("PUT", f"persistent/{namespace}/{local}/partitions", 1)
        assert pulsar_rest("GET", f"namespaces/{namespace}/deduplication") in (None, False)

        recs = [
            Rec(f"k{i}".encode(), f"v{i}".encode(), (), 1_700_000_000_000 + i) for i in range(6)
        ]
        assert PRODUCERS["confluent-kafka"](fresh_kop.bootstrap, full, recs, None) == list(range(6))

        assert pulsar_rest("GET", f"namespaces/{namespace}/deduplication") is True
        stats = internal_stats(local, namespace)
        cursors = {name: c["markDeletePosition"] for name, c in stats["cursors"].items()}
        first_ledger = stats["ledgers"][0]["ledgerId"]
        assert cursors.get("pulsar.dedup") == f"{first_ledger}:-1", (
            f"deduplication was not on before the first write: cursors {cursors}, "
            f"ledgers {stats['ledgers']}"
        )

        got = cf_consume(fresh_kop.bootstrap, full, len(recs))
        assert [(r.offset, r.key, r.value) for r in got] == [
            (i, r.key, r.value) for i, r in enumerate(recs)
        ]
    finally:
        fresh_kop.stop()  # releases its producer and readers, so the topic can go
        with contextlib.suppress(urllib.error.URLError):
            pulsar_rest("DELETE", f"persistent/{namespace}/{local}/partitions?force=true")
            pulsar_rest("DELETE", f"namespaces/{namespace}")
