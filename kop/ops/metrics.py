"""Prometheus metrics; `Metrics` is the server's RequestObserver."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kop.protocol.messages import ApiKey


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name.lower()
    except ValueError:
        return str(api_key)


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
        self.connections = Gauge(
            "kop_connections", "Open Kafka connections", registry=self.registry
        )
        self.partitions = Gauge(
            "kop_owned_partitions", "Partitions this kop follows", registry=self.registry
        )

    def request_done(self, api_key: int, seconds: float, ok: bool) -> None:
        name = _api_name(api_key)
        self.requests.labels(name, "ok" if ok else "error").inc()
        self.latency.labels(name).observe(seconds)

    def connection_change(self, delta: int) -> None:
        self.connections.inc(delta)
