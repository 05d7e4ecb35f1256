"""The chart's alert rules and Grafana dashboard (`metrics.prometheusRule`,
`metrics.grafanaDashboard`): off by default; when on, every query is PromQL that
parses, over metrics kop exports (docs/metrics.md, itself checked against the code),
and every alert has its entry in docs/operations.md saying what to do."""

from __future__ import annotations

import json
import re

import promql_parser
import pytest

from tests.deploy.chart import CHART, REPO, render

TOKEN_TLS = CHART / "ci" / "token-tls-nodeport-values.yaml"
DASHBOARD = CHART / "dashboards" / "kop.json"
_SELECTOR = re.compile(r'VectorSelector \{\s*name: Some\(\s*"([^"]+)"')
_SUFFIXES = ("_bucket", "_sum", "_count")


def documented() -> set[str]:
    names = set(
        re.findall(r"^\| `([a-z_]+)` \| (\w+) ", (REPO / "docs/metrics.md").read_text(), re.M)
    )
    out = set()
    for name, kind in names:
        out.add(name)
        if kind == "histogram":
            out.update(name + s for s in _SUFFIXES)
    return out | {"up"}  # Prometheus' own, per target


def metrics_of(expr: str) -> set[str]:
    """The metric names a query selects (it must parse: a syntax error fails here)."""
    concrete = expr.replace("$__rate_interval", "5m").replace("$job", ".*")
    return set(_SELECTOR.findall(repr(promql_parser.parse(concrete))))


def test_off_by_default() -> None:
    rendered = render()
    assert not rendered.kinds("PrometheusRule")
    assert not [
        c for c in rendered.kinds("ConfigMap") if c["metadata"]["name"].endswith("-dashboard")
    ]


def test_alerts_are_promql_over_exported_metrics_and_each_has_its_runbook_entry() -> None:
    rule = render(TOKEN_TLS).one("PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    rules = rule["spec"]["groups"][0]["rules"]
    exported = documented()
    runbook = (REPO / "docs/operations.md").read_text()
    for r in rules:
        used = metrics_of(r["expr"])
        assert used and used <= exported, (r["alert"], used - exported)
        assert f"### {r['alert']}\n" in runbook, f"docs/operations.md says nothing of {r['alert']}"
        assert r["labels"]["severity"] in ("critical", "warning", "info")
    lag = next(r for r in rules if r["alert"] == "KopGroupLagHigh")
    assert lag["expr"].endswith("> 5000")  # the values' threshold
    up = next(r for r in rules if r["alert"] == "KopInstanceDown")
    assert 'job="kop-headless"' in up["expr"]  # the ServiceMonitor's job: the headless Service


def test_the_dashboard_is_the_charts_file_and_queries_exported_metrics() -> None:
    config_map = render(TOKEN_TLS).one("ConfigMap", "kop-dashboard")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(config_map["data"]["kop.json"])
    assert dashboard == json.loads(DASHBOARD.read_text())
    exported = documented()
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(queries) >= 15
    for q in queries:
        used = metrics_of(q)
        assert used and used <= exported, (q, used - exported)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("broken", ["sum by (pod (up)", "rate(kop_requests_total[5m]"])
def test_a_query_that_does_not_parse_fails(broken: str) -> None:
    with pytest.raises(Exception):  # noqa: B017 - the parser's own error type
        metrics_of(broken)


def test_a_metric_kop_does_not_export_is_caught() -> None:
    assert not metrics_of("rate(kop_no_such_thing_total[5m])") <= documented()
