"""docs/metrics.md is the list of every metric kop exports, made from the code: a
metric added without its line there, or a line left for a metric that is gone, fails
here. `python -m tests.gateway.test_metrics_reference` writes the file anew."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

from kio.schema.offset_commit.v2.request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

from conformance.clients.raw import RawClient
from kop.ops.metrics import Metrics
from kop.protocol.records import Record, build_batch
from kop.pulsar.client import ReaderStats, SendBudget
from kop.pulsar.wire.read_ahead import ReadAheadBudget
from tests.gateway.memory_gateway import gateway_with_hot_topic
from tests.gateway.test_topic_traffic import _produce

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"

HEAD = """# Metrics

Everything kop exports at `/metrics` on its admin HTTP (Prometheus text format; who may
read it: [security.md](security.md#the-admin-http-api-and-kop-groups)). The table is made from the
code (`python -m tests.gateway.test_metrics_reference`), and `make test` fails when the two
differ. Counters carry Prometheus' `_total` suffix; histograms their `_bucket`, `_sum`
and `_count` series. The `process_*` and `python_*` series are the Prometheus client's
own. Labels name tenants, namespaces, topics and groups: the endpoint is for operators.

| Metric | Type | Labels | What it counts |
|---|---|---|---|
"""


def families(metrics: Metrics) -> list[tuple[str, str, str, str]]:
    """(name as scraped, type, labels, help) of every family, sorted by name."""
    rows = []
    for family in metrics.registry.collect():
        suffix = {"counter": "_total", "info": "_info"}.get(family.type, "")
        name = family.name + suffix
        labels = sorted(
            {k for s in family.samples for k in s.labels if k not in ("le", "quantile")}
        )
        doc = family.documentation.replace("|", "\\|")
        rows.append((name, family.type, ", ".join(f"`{x}`" for x in labels), doc))
    return sorted(rows)


def _commit(client: RawClient) -> None:
    """A group's offset (after a record, so its partition is open), so that the group
    and topic metrics have samples to show their labels by."""
    part = OffsetCommitRequestPartition(
        partition_index=0, committed_offset=0, committed_metadata=""
    )
    r = client.request(
        8, 2, group_id="g", generation_id_or_member_epoch=-1, member_id="",
        retention_time=datetime.timedelta(milliseconds=-1),
        topics=(OffsetCommitRequestTopic(name="hot", partitions=(part,)),),
    )  # fmt: skip
    assert r.topics[0].partitions[0].error_code == 0


async def current() -> str:
    """The reference as the code makes it: a gateway over the in-memory storage, with
    a produce and a group so that labelled families show their labels, plus the
    collectors only a Pulsar backend registers."""
    async with gateway_with_hot_topic(1) as (gateway, _backend):
        client = RawClient(gateway.kafka_port)
        try:
            await asyncio.to_thread(_produce, client, 0, build_batch([Record(0, 0, None, b"v")]))
            await asyncio.to_thread(_commit, client)
        finally:
            client.close()
        metrics = gateway.metrics
        metrics.watch_readers(ReaderStats())
        metrics.watch_pulsar_memory(ReadAheadBudget(1 << 20), SendBudget(1 << 20))
        metrics.request_done(0, 0.001, True, {3: 1})
        metrics.connection_closed("idle")
        metrics.state_topic_lost("persistent://public/__kop/consumer-offsets", False)
        rows = families(metrics)
    lines = [f"| `{n}` | {t} | {labels} | {doc} |" for n, t, labels, doc in rows]
    return HEAD + "\n".join(lines) + "\n"


async def test_every_metric_is_documented_and_every_documented_metric_exists() -> None:
    made = await current()
    assert DOC.read_text() == made, (
        "docs/metrics.md differs from the metrics kop exports: "
        "run `python -m tests.gateway.test_metrics_reference`"
    )


if __name__ == "__main__":
    DOC.write_text(asyncio.run(current()))
    print(f"wrote {DOC}")
