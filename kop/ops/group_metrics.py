"""Consumer-group metrics, read when scraped: groups by state and rebalances from
the coordinator (the groups this instance coordinates), lag per group and partition
from every group's commits (`CommittedView`) for the partitions this instance has
open, so that with several instances each (group, partition) is reported once, by
the instance that knows the partition's end."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kop.groups.service import GroupService
from kop.groups.types import GroupState
from kop.partitions.manager import LogManager
from kop.storage.naming import InvalidTopicName, resolve


class GroupCollector(Collector):
    def __init__(self, groups: GroupService, logs: LogManager) -> None:
        self._groups = groups
        self._logs = logs

    def collect(self) -> Iterator[Metric]:
        coordinator = self._groups.coordinator
        by_state = GaugeMetricFamily("kop_groups", "Consumer groups by state", labels=["state"])
        counts: dict[GroupState, int] = {s: 0 for s in GroupState if s is not GroupState.DEAD}
        for g in coordinator.groups.values():
            counts[g.state] = counts.get(g.state, 0) + 1
        for state, n in counts.items():
            by_state.add_metric([state.value], n)
        yield by_state
        yield CounterMetricFamily(
            "kop_group_rebalances", "Rebalances started", value=coordinator.rebalance.count
        )
        lag = GaugeMetricFamily(
            "kop_group_lag",
            "Records between a group's committed offset and the partition's end",
            labels=["tenant", "namespace", "group", "topic", "partition"],
        )
        scope = self._groups.scope
        owned = self._logs.owned()
        for group, offsets in self._groups.committed.items():
            for tp, committed in offsets.items():
                ns, plain = scope.split(group)
                try:
                    topic = resolve(tp.topic, ns)
                except InvalidTopicName:
                    continue
                names = (topic.partition(tp.partition, True), topic.partition(tp.partition, False))
                plog = next((owned[n] for n in names if n in owned), None)
                if plog is not None:
                    behind = max(plog.high_watermark - committed.offset, 0)
                    labels = [ns.tenant, ns.namespace, plain, tp.topic, str(tp.partition)]
                    lag.add_metric(labels, behind)
        yield lag
