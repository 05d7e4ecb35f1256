"""The chart's optional neighbours of the pods: their own ServiceAccount (no token
mounted), zone spreading, extra volumes, a NetworkPolicy, and `helm test`, whose check
is run here against a live kop (over the in-memory storage): the same script the
test pod runs, so a `helm test` that passes means a bootstrap that answers Kafka."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

from tests.deploy.chart import CHART, Rendered, render
from tests.gateway.memory_gateway import free_port, gateway_with_hot_topic

EXTRAS = CHART / "ci" / "extras-values.yaml"
CHECK = CHART / "files" / "helm_test.py"


def _pod(rendered: Rendered) -> dict[str, Any]:
    spec: dict[str, Any] = rendered.one("StatefulSet")["spec"]["template"]["spec"]
    return spec


def test_the_pods_run_as_an_account_of_their_own_without_its_token() -> None:
    default = render()
    account = default.one("ServiceAccount")
    assert account["automountServiceAccountToken"] is False
    assert _pod(default)["serviceAccountName"] == account["metadata"]["name"] == "kop"
    assert _pod(default)["automountServiceAccountToken"] is False
    named = render(EXTRAS)
    assert named.one("ServiceAccount")["metadata"]["name"] == "kop-apps"
    assert named.one("ServiceAccount")["metadata"]["annotations"] == {
        "example.com/owner": "platform"
    }
    assert _pod(named)["serviceAccountName"] == "kop-apps"
    theirs = render(sets=("serviceAccount.create=false", "serviceAccount.name=shared"))
    assert not theirs.kinds("ServiceAccount")
    assert _pod(theirs)["serviceAccountName"] == "shared"
    none = render(sets=("serviceAccount.create=false",))
    assert "serviceAccountName" not in _pod(none)


def test_spreading_extra_volumes_and_sidecars_reach_the_pod() -> None:
    assert [c["name"] for c in _pod(render())["containers"]] == ["kop"]
    assert "initContainers" not in _pod(render())
    pod = _pod(render(EXTRAS))
    assert [c["name"] for c in pod["containers"]] == ["kop", "log-shipper"]
    assert [c["name"] for c in pod["initContainers"]] == ["wait-for-pulsar"]
    (spread,) = pod["topologySpreadConstraints"]
    assert spread["topologyKey"] == "topology.kubernetes.io/zone"
    assert spread["labelSelector"]["matchLabels"]["app.kubernetes.io/name"] == "kop"
    assert {"name": "ca-bundle", "configMap": {"name": "corporate-ca"}} in pod["volumes"]
    mounts = pod["containers"][0]["volumeMounts"]
    assert {"name": "ca-bundle", "mountPath": "/etc/ssl/corporate", "readOnly": True} in mounts


def test_the_network_policy_admits_clients_instances_and_monitoring_only() -> None:
    assert not render().kinds("NetworkPolicy")
    policy = render(EXTRAS).one("NetworkPolicy")["spec"]
    assert policy["policyTypes"] == ["Ingress"]  # egress (Pulsar, DNS) stays open
    kafka, admin = policy["ingress"]
    # Kafka clients reach the Schema Registry too (their serializers ask it)
    assert kafka["ports"] == [{"port": "kafka"}, {"port": "schema-registry"}]
    peers = kafka["from"]
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "apps"}}} in peers
    # the other kop pods: instances send each other peer requests on the Kafka listener
    assert any(p.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/name")
               == "kop" for p in peers)  # fmt: skip
    assert admin["ports"] == [{"port": "admin"}]
    test_labels = {"app.kubernetes.io/instance": "kop", "app.kubernetes.io/component": "helm-test"}
    helm_test = {"podSelector": {"matchLabels": test_labels}}
    assert admin["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
        helm_test,
    ]
    assert helm_test in peers
    # without peers for the admin port there is no rule for it: an empty `from` would
    # admit everyone
    closed = render(EXTRAS, sets=("tests.enabled=false", "networkPolicy.adminFrom=null"))
    assert [r["ports"] for r in closed.one("NetworkPolicy")["spec"]["ingress"]] == [
        [{"port": "kafka"}, {"port": "schema-registry"}]
    ]
    no_registry = render(EXTRAS, sets=("ports.schemaRegistry=0",))
    (kafka_rule, *_) = no_registry.one("NetworkPolicy")["spec"]["ingress"]
    assert kafka_rule["ports"] == [{"port": "kafka"}]


def test_helm_test_pod_runs_the_charts_check_with_kops_image() -> None:
    pod = render().one("Pod", "kop-test")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (container,) = pod["spec"]["containers"]
    assert container["image"].startswith("kop:") or "/kop:" in container["image"]
    assert container["command"] == ["python", "-c"]
    assert container["args"][0].strip() == CHECK.read_text().strip()
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["KAFKA"] == "kop:9092"
    assert env["ADMIN"].startswith("http://kop-0.kop-headless.") and env["ADMIN"].endswith(
        "/readyz"
    )
    assert not render(sets=("tests.enabled=false",)).kinds("Pod")
    # not one of the instances: no Service or disruption budget selects it
    rendered = render()
    labels = pod["metadata"]["labels"]
    selectors = [s["spec"]["selector"] for s in rendered.kinds("Service")]
    selectors.append(rendered.one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"])
    assert not [sel for sel in selectors if sel.items() <= labels.items()]


async def test_the_helm_test_check_passes_against_a_kop_and_fails_without_one() -> None:
    admin = free_port()
    async with gateway_with_hot_topic(1, admin_port=admin, admin_host="127.0.0.1") as (g, _):
        env = {**_clean_env(), "KAFKA": f"127.0.0.1:{g.kafka_port}",
               "ADMIN": f"http://127.0.0.1:{admin}/readyz"}  # fmt: skip
        ok = await asyncio.to_thread(_run, env)
    assert ok.returncode == 0, ok.stderr
    assert "answers" in ok.stdout and "pod 0 is ready" in ok.stdout
    gone = await asyncio.to_thread(_run, {**env, "KAFKA": f"127.0.0.1:{free_port()}"})
    assert gone.returncode != 0


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("KOP_")}


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHECK.read_text()], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
