"""Prometheus metrics; `Metrics` is the server's RequestObserver, and reads the
log's own counters (`LogStats`, budgets) when scraped."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

import kop
from kop.cluster.membership import Membership
from kop.entries.native import native
from kop.groups.service import GroupService
from kop.log.traffic import Traffic
from kop.ops.group_metrics import GroupCollector
from kop.partitions.manager import LogManager
from kop.protocol.errors import ErrorCode
from kop.protocol.messages import ApiKey
from kop.storage.naming import split_full

_UNKNOWN_API = -1  # every key kop does not implement: one label, whatever a client sends


def _api_name(api_key: int) -> str:
    return ApiKey(api_key).name.lower() if api_key in _APIS else "unknown"


_APIS = frozenset(int(k) for k in ApiKey)


def build_info() -> dict[str, str]:
    """kop's version (the installed distribution's) and whether the native kernels
    run (`kop.entries.native`)."""
    return {"version": kop.version(), "native": "true" if native() is not None else "false"}


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return str(code)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.requests = Counter(
            "kop_requests", "Kafka requests answered", ["api", "outcome"], registry=self.registry
        )
        self.latency = Histogram(
            "kop_request_seconds",
            "Time from reading a request to having its response",
            ["api"],
            buckets=(0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=self.registry,
        )
        self.errors = Counter(
            "kop_request_errors",
            "Kafka error codes in answers, by API and error (each failed partition, group "
            "or resource counts once, as Kafka's ErrorsPerSec)",
            ["api", "error"],
            registry=self.registry,
        )
        self._children: dict[tuple[int, bool], tuple[Counter, Histogram]] = {}
        self._error_children: dict[tuple[int, int], Counter] = {}
        self.connections = Gauge(
            "kop_connections", "Open Kafka connections", registry=self.registry
        )
        self.closed = Counter(
            "kop_connections_closed",
            "Kafka connections kop closed or refused itself, by reason",
            ["reason"],
            registry=self.registry,
        )
        self.throttles = Counter(
            "kop_quota_throttled",
            "Answers throttled because their client was over a quota, by quota key",
            ["quota"],
            registry=self.registry,
        )
        self.throttle_seconds = Counter(
            "kop_quota_throttle_seconds",
            "Time throttled clients were told to wait, by quota key",
            ["quota"],
            registry=self.registry,
        )

        self._lost = Gauge(
            "kop_state_topic_lost",
            "1 while kop's offsets or transaction state topic is deleted or replaced under it",
            ["topic"],
            registry=self.registry,
        )

        # What a dashboard and an alert need of the process itself: CPU, memory, open
        # files, start time, garbage collections, and which kop this is.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        Info("kop_build", "The running kop: its version and whether kop_native is loaded",
             registry=self.registry).info(build_info())  # fmt: skip

        self.loop_lag = Histogram(
            "kop_event_loop_lag_seconds",
            "How late the event loop woke a task that slept 100 ms (kop/ops/loop_lag.py)",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=self.registry,
        )
        self.commit_latency = Histogram(
            "kop_offset_commit_seconds",
            "Time to persist an offset commit in the offsets topic",
            buckets=(0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=self.registry,
        )

    def state_topic_lost(self, topic: str, lost: bool) -> None:
        self._lost.labels(topic).set(1 if lost else 0)

    def watch(self, logs: LogManager) -> None:
        self.registry.register(_LogCollector(logs))

    def watch_membership(self, membership: Membership) -> None:
        self.registry.register(_BeatCollector(membership))

    def watch_readers(self, stats: ReaderStats) -> None:
        self.registry.register(_ReaderCollector(stats))

    def watch_pulsar_memory(self, read_ahead: ReadAheadBudget, sends: Budget) -> None:
        self.registry.register(_PulsarMemoryCollector(read_ahead, sends))

    def watch_groups(self, groups: GroupService, logs: LogManager) -> None:
        self.registry.register(GroupCollector(groups, logs))
        groups.commits.on_commit = self.commit_latency.observe

    def request_done(
        self, api_key: int, seconds: float, ok: bool, errors: Mapping[int, int]
    ) -> None:
        # Labelled children looked up once per (api, outcome): per request, the
        # lookup cost more than the counting.
        if api_key not in _APIS:  # a client's made-up key must not make a series of its own
            api_key = _UNKNOWN_API
        children = self._children.get((api_key, ok))
        if children is None:
            name = _api_name(api_key)
            outcome = "ok" if ok else "error"
            children = (self.requests.labels(name, outcome), self.latency.labels(name))
            self._children[(api_key, ok)] = children
        children[0].inc()
        children[1].observe(seconds)
        for code, n in errors.items():
            counter = self._error_children.get((api_key, code))
            if counter is None:
                counter = self.errors.labels(_api_name(api_key), _error_name(code))
                self._error_children[(api_key, code)] = counter
            counter.inc(n)

    def connection_change(self, delta: int) -> None:
        self.connections.inc(delta)

    def connection_closed(self, reason: str) -> None:
        self.closed.labels(reason).inc()

    def throttled(self, quota: str, seconds: float) -> None:
        self.throttles.labels(quota).inc()
        self.throttle_seconds.labels(quota).inc(seconds)

    def watch_memory(self, requests: Budget, answers: Budget) -> None:
        self.registry.register(_MemoryCollector(requests, answers))

    def watch_fetch_sessions(self, sessions: FetchSessionStats) -> None:
        self.registry.register(_FetchSessionCollector(sessions))


class Budget(Protocol):
    """A memory budget shared by all connections (kop.server.memory)."""

    limit: int
    used: int


class _MemoryCollector(Collector):
    def __init__(self, requests: Budget, answers: Budget) -> None:
        self._budgets = {"request": requests, "answer": answers}

    def collect(self) -> Iterator[Metric]:
        for name, budget in self._budgets.items():
            yield GaugeMetricFamily(
                f"kop_{name}_memory_bytes",
                f"{name.capitalize()} bytes held by connections, in total",
                value=budget.used,
            )
            yield GaugeMetricFamily(
                f"kop_{name}_memory_limit_bytes",
                f"Budget for {name} bytes held by connections",
                value=budget.limit,
            )


class FetchSessionStats(Protocol):
    """What the fetch session cache shows (kop.api.fetch_sessions.FetchSessions)."""

    @property
    def sessions(self) -> int: ...

    partitions: int
    evictions: int


class _FetchSessionCollector(Collector):
    """Kafka's NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached and
    IncrementalFetchSessionEvictionsPerSec (a counter here: Prometheus takes the rate)."""

    def __init__(self, sessions: FetchSessionStats) -> None:
        self._sessions = sessions

    def collect(self) -> Iterator[Metric]:
        s = self._sessions
        yield GaugeMetricFamily(
            "kop_fetch_sessions", "Incremental fetch sessions cached here", value=s.sessions
        )
        yield GaugeMetricFamily(
            "kop_fetch_session_partitions",
            "Partitions cached in incremental fetch sessions here, in total",
            value=s.partitions,
        )
        yield CounterMetricFamily(
            "kop_fetch_session_evictions",
            "Incremental fetch sessions evicted to make room for another",
            value=s.evictions,
        )


class _LogCollector(Collector):
    """What the partition logs met and hold, read at scrape time."""

    def __init__(self, logs: LogManager) -> None:
        self._logs = logs

    def collect(self) -> Iterator[Metric]:
        stats = self._logs.stats
        shared = self._logs.shared
        counters = {
            "kop_malformed_messages": (
                "Messages with malformed __kafka.* properties, served by documented fallbacks",
                stats.malformed,
            ),
            "kop_log_trims": (
                "Times the log start moved or counting resumed because Pulsar deleted data",
                stats.trims,
            ),
            "kop_index_conflicts": (
                "Persisted index entries found disagreeing with the count (healed)",
                stats.conflicts,
            ),
            "kop_index_write_failures": (
                "Offset-index writes that failed or timed out (retried; offsets stay correct)",
                stats.index_write_failures,
            ),
            "kop_history_readers_opened": (
                "Pulsar readers opened to serve offsets behind the tail buffer",
                stats.history_readers,
            ),
            "kop_entries_counted_from_receipts": (
                "kop's own entries counted from Pulsar's receipts, without reading them back",
                stats.counted_from_receipts,
            ),
            "kop_entries_counted_from_reads": (
                "Entries the tail followers read from Pulsar to count them",
                stats.counted_from_reads,
            ),
            "kop_compactions": (
                "Compaction cycles of compacted topics (Pulsar compacted, survivors noted)",
                stats.compactions,
            ),
            "kop_compaction_failures": (
                "Compaction cycles that failed (the next cycle repeats the work)",
                stats.compaction_failures,
            ),
            "kop_compaction_unknown_entries": (
                "Entries Pulsar's compaction kept whose offset kop could not find (not served)",
                stats.compaction_unknown_entries,
            ),
            "kop_compacted_readers_opened": (
                "Pulsar readers opened on a compacted topic's compacted view",
                stats.compacted_readers,
            ),
        }
        for name, (doc, value) in counters.items():
            yield CounterMetricFamily(name, doc, value=value)
        gauges = {
            "kop_owned_partitions": ("Partitions this kop follows", len(self._logs.owned())),
            "kop_tail_buffer_bytes": ("Bytes held by tail buffers", shared.tail_budget.used),
            "kop_tail_buffer_limit_bytes": ("Tail buffer budget", shared.tail_budget.limit),
            "kop_kept_history_readers": ("History readers kept for reuse", len(shared.cursors)),
        }
        for name, (doc, gauge) in gauges.items():
            yield GaugeMetricFamily(name, doc, value=gauge)
        yield from _traffic(self._logs.shared.traffic)


_TRAFFIC = {
    "bytes_in": ("kop_topic_bytes_in", "Bytes of record batches produced to the topic here"),
    "records_in": ("kop_topic_records_in", "Records produced to the topic here"),
    "bytes_out": ("kop_topic_bytes_out", "Bytes of record batches fetched from the topic here"),
    "records_out": ("kop_topic_records_out", "Records fetched from the topic here"),
}


def _traffic(traffic: Traffic) -> Iterator[Metric]:
    """Per topic, as Kafka's BytesInPerSec/BytesOutPerSec/MessagesInPerSec by topic."""
    labels = ["tenant", "namespace", "topic"]
    families = {
        field: CounterMetricFamily(name, doc, labels=labels)
        for field, (name, doc) in _TRAFFIC.items()
    }
    for topic, flow in sorted(traffic.by_topic().items()):
        names = list(split_full(topic))
        for field, family in families.items():
            family.add_metric(names, getattr(flow, field))
    yield from families.values()


class _BeatCollector(Collector):
    """Heartbeats in the members topic not signed with this cluster's secret: forged
    (a role that can write kop's system namespace through Pulsar), or an instance
    started with another secret. None is ever counted as a member."""

    def __init__(self, membership: Membership) -> None:
        self._membership = membership

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "kop_heartbeats_unproven",
            "Heartbeats read that were not signed with this cluster's secret (ignored)",
            value=self._membership.beats.unproven_count,
        )


class ReaderStats(Protocol):
    """What the storage's reader count shows (kop/pulsar's `ReaderStats` has it): ops reads
    the storage's numbers through this shape, never through the storage's own types."""

    @property
    def opened(self) -> int: ...

    @property
    def open(self) -> int: ...


class ReadAheadBudget(Protocol):
    """The storage's read-ahead budget as ops reads it (kop/pulsar's `ReadAheadBudget`)."""

    @property
    def held(self) -> int: ...

    @property
    def reserved(self) -> int: ...

    @property
    def limit(self) -> int: ...


class _ReaderCollector(Collector):
    """Pulsar readers: each one created is a subscription created (and, once
    closed, deleted) on the broker, so their rate is load on Pulsar."""

    def __init__(self, stats: ReaderStats) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "kop_pulsar_readers_opened",
            "Pulsar readers created (each a non-durable subscription on the broker)",
            value=self._stats.opened,
        )
        yield GaugeMetricFamily("kop_pulsar_readers_open", "Pulsar readers open", self._stats.open)


class _PulsarMemoryCollector(Collector):
    """The two byte budgets of kop's Pulsar client, each in total across partitions:
    what readers received and the log has not taken yet, and what writers sent and
    Pulsar has not acknowledged yet."""

    def __init__(self, read_ahead: ReadAheadBudget, sends: Budget) -> None:
        self._read_ahead = read_ahead
        self._sends = sends

    def collect(self) -> Iterator[Metric]:
        ahead, sends = self._read_ahead, self._sends
        gauges = {
            "kop_pulsar_read_ahead_bytes": (
                "Bytes Pulsar readers received and kop's log has not taken yet",
                ahead.held,
            ),
            "kop_pulsar_read_ahead_reserved_bytes": (
                "Bytes the readers' outstanding flow permits are expected to bring",
                ahead.reserved,
            ),
            "kop_pulsar_read_ahead_limit_bytes": (
                "Read-ahead budget of all Pulsar readers (pulsar_read_ahead_bytes)",
                ahead.limit,
            ),
            "kop_pulsar_send_bytes": (
                "Bytes sent to Pulsar and not yet acknowledged, in total",
                sends.used,
            ),
            "kop_pulsar_send_limit_bytes": (
                "Send budget of all Pulsar writers (pulsar_send_budget_bytes)",
                sends.limit,
            ),
        }
        for name, (doc, value) in gauges.items():
            yield GaugeMetricFamily(name, doc, value=value)
