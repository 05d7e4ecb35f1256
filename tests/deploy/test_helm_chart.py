"""The Helm chart (helm/kop), checked without a cluster: `make helm-check` and `make test`.

helm lint and helm template with the default values and every helm/kop/ci/*.yaml,
kubeconform -strict on everything rendered (Kubernetes v1.37.2's own schemas), and
what users rely on: each pod's node id and advertised address, the probes, the
Pulsar credentials as files kop re-reads, a kop.toml that kop itself accepts.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kop.config.settings import load_config, unknown_env
from kop.pulsar.wire.auth import TokenAuth
from tests.deploy.chart import CHART, CI_VALUES, NAMESPACE, Rendered, helm, kubeconform, render

VALUE_SETS = [(), *((path,) for path in CI_VALUES)]
VALUE_IDS = ["default", *(path.stem for path in CI_VALUES)]
TOKEN_TLS = CHART / "ci" / "token-tls-nodeport-values.yaml"
OAUTH2_LB = CHART / "ci" / "oauth2-loadbalancer-values.yaml"
MTLS = CHART / "ci" / "mtls-values.yaml"
SASL_SSL = CHART / "ci" / "sasl-ssl-values.yaml"
CERT_MANAGER = CHART / "ci" / "cert-manager-values.yaml"
INGRESS = CHART / "ci" / "ingress-values.yaml"


def test_ci_values_cover_the_optional_parts() -> None:
    assert {p.name for p in CI_VALUES} >= {
        TOKEN_TLS.name, OAUTH2_LB.name, MTLS.name, SASL_SSL.name, CERT_MANAGER.name,
        INGRESS.name,
    }  # fmt: skip


@pytest.mark.parametrize("values", VALUE_SETS, ids=VALUE_IDS)
def test_lint(values: tuple[Path, ...]) -> None:
    args = [f"--values={v}" for v in values]
    run = helm("lint", "--strict", str(CHART), *args)
    assert "1 chart(s) linted, 0 chart(s) failed" in run.stdout


@pytest.mark.parametrize("values", VALUE_SETS, ids=VALUE_IDS)
def test_rendered_manifests_validate(values: tuple[Path, ...]) -> None:
    rendered = render(*values)
    code, report = kubeconform(rendered.text)
    assert code == 0, json.dumps(report["resources"], indent=1)
    # the Prometheus Operator's kinds and cert-manager's: no schema among Kubernetes' own
    monitors = sum(
        len(rendered.kinds(k)) for k in ("ServiceMonitor", "PrometheusRule", "Certificate")
    )
    assert report["summary"] == {
        "valid": len(rendered.docs) - monitors,
        "invalid": 0,
        "errors": 0,
        "skipped": monitors,
    }


@pytest.mark.parametrize(
    "edit",
    [
        ("  serviceName: kop-headless\n", "  serviceName: kop-headless\n  replicaz: 3\n"),
        ("  replicas: 1\n", '  replicas: "one"\n'),
        ("  publishNotReadyAddresses: true\n", "  publishNotReadyAdresses: true\n"),
    ],
    ids=["unknown-field", "wrong-type", "misspelt-field"],
)
def test_kubeconform_refuses_what_the_api_server_would(edit: tuple[str, str]) -> None:
    """The check has teeth: the schemas refuse unknown fields and wrong types."""
    text = render().text
    assert edit[0] in text
    code, report = kubeconform(text.replace(edit[0], edit[1], 1))
    assert code == 1
    assert report["summary"]["invalid"] == 1


def _pod_env(rendered: Rendered, ordinal: int, tmp_path: Path, host_ip: str = "") -> dict[str, str]:
    """Runs the container's command as the pod would (POD_NAME from the downward API)
    with a stand-in `kop` that prints its environment and arguments."""
    container = rendered.container
    fullname = rendered.one("StatefulSet")["metadata"]["name"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "kop"
    stub.write_text(
        "#!/bin/sh\nexec python3 -c 'import json, os, sys; "
        'print(json.dumps({**os.environ, "ARGS": " ".join(sys.argv[1:])}))\' "$@"\n'
    )
    stub.chmod(0o755)
    fields = {"metadata.name": f"{fullname}-{ordinal}", "status.hostIP": host_ip}
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    for var in container["env"]:
        if "secretKeyRef" in var.get("valueFrom", {}):  # what the kubelet would read
            env[var["name"]] = "from-" + var["valueFrom"]["secretKeyRef"]["name"]
            continue
        source = var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        env[var["name"]] = fields[source] if source else var["value"]
    run = subprocess.run(container["command"], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return dict(json.loads(run.stdout))


@pytest.mark.parametrize("release", ["kop", "my-kop"])
def test_each_pod_is_the_node_of_its_ordinal_at_its_own_address(
    release: str, tmp_path: Path
) -> None:
    rendered = render(sets=("replicaCount=3",), release=release)
    sts = rendered.one("StatefulSet")
    headless = rendered.one("Service", f"{release}-headless")
    assert sts["metadata"]["name"] == release
    assert sts["spec"]["serviceName"] == headless["metadata"]["name"]
    assert sts["spec"]["podManagementPolicy"] == "Parallel"
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert headless["spec"]["selector"] == sts["spec"]["selector"]["matchLabels"]
    for ordinal in range(3):
        env = _pod_env(rendered, ordinal, tmp_path)
        assert env["KOP_NODE_ID"] == str(ordinal)
        assert (
            env["KOP_ADVERTISED_HOST"] == f"{release}-{ordinal}.{release}-headless.{NAMESPACE}.svc"
        )
        assert "KOP_ADVERTISED_PORT" not in env
        assert env["ARGS"] == "serve --config /etc/kop/kop.toml"


def test_cluster_domain_makes_advertised_names_fully_qualified(tmp_path: Path) -> None:
    env = _pod_env(render(sets=("clusterDomain=cluster.local",)), 0, tmp_path)
    assert env["KOP_ADVERTISED_HOST"] == f"kop-0.kop-headless.{NAMESPACE}.svc.cluster.local"


def test_pods_get_no_service_links() -> None:
    """Kubernetes would give each pod KOP_SERVICE_HOST, KOP_PORT=tcp://... for a
    Service named kop; kop refuses KOP_* variables that are not its settings."""
    assert unknown_env({"KOP_SERVICE_HOST": "10.0.0.1", "KOP_PORT_9092_TCP": "tcp://x"})
    pod = render().one("StatefulSet")["spec"]["template"]["spec"]
    assert pod["enableServiceLinks"] is False


def test_probes_and_grace() -> None:
    rendered = render()
    container = rendered.container
    admin = {p["name"]: p["containerPort"] for p in container["ports"]}["admin"]
    assert admin == rendered.kop_toml["admin_port"] == 9094
    for probe, path in [
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
        ("startupProbe", "/healthz"),
    ]:
        assert container[probe]["httpGet"] == {"path": path, "port": "admin"}
    pod = rendered.one("StatefulSet")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] >= 60


def _local_config(rendered: Rendered, tmp_path: Path, files: dict[str, str]) -> Path:
    """kop.toml with /etc/kop/ moved under tmp_path, where `files` stand for the
    mounted Secrets."""
    text = rendered.one("ConfigMap", "kop")["data"]["kop.toml"]
    root = tmp_path / "etc-kop"
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    path = tmp_path / "kop.toml"
    path.write_text(text.replace("/etc/kop/", f"{root}/"))
    return path


@pytest.mark.parametrize("values", VALUE_SETS, ids=VALUE_IDS)
def test_kop_accepts_the_rendered_config(
    values: tuple[Path, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = render(*values)
    files = {
        "pulsar-auth/token": "eyJ.token\n",
        "pulsar-auth/credentials.json": '{"client_id": "kop", "client_secret": "s"}',
        "pulsar-tls/ca.crt": "PEM",
        "pulsar-tls/tls.crt": "PEM",
        "pulsar-tls/tls.key": "PEM",
        "kafka-tls/tls.crt": "PEM",
        "kafka-tls/tls.key": "PEM",
        "kafka-tls/ca.crt": "PEM",
        "token-key/token-secret.key": "k" * 32,
    }
    path = _local_config(rendered, tmp_path, files)
    environ = {"KOP_NODE_ID": "2", "KOP_ADVERTISED_HOST": "kop-2.kop-headless.kafka.svc"}
    for name in [n for n in os.environ if n.startswith("KOP_")]:  # only the pod's
        monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    config = load_config(path, environ=environ)
    assert config.node_id == 2
    assert config.advertised_host == "kop-2.kop-headless.kafka.svc"
    assert config.port == 9092 and config.admin_port == 9094


def test_default_config_names_pulsar_from_values() -> None:
    toml = render().kop_toml
    assert toml["pulsar_service_url"] == "pulsar://pulsar-proxy.pulsar.svc:6650"
    assert toml["pulsar_http_url"] == "http://pulsar-proxy.pulsar.svc:80"
    assert toml["pulsar_auth_plugin"] == "none"
    assert "pulsar_auth_params" not in toml and "node_id" not in toml


def _volumes(rendered: Rendered) -> tuple[dict[str, Any], dict[str, Any]]:
    pod = rendered.one("StatefulSet")["spec"]["template"]["spec"]
    mounts = {m["name"]: m for m in rendered.container["volumeMounts"]}
    return {v["name"]: v for v in pod["volumes"]}, mounts


def test_token_is_a_mounted_secret_file_kop_rereads(tmp_path: Path) -> None:
    rendered = render(TOKEN_TLS)
    volumes, mounts = _volumes(rendered)
    assert volumes["pulsar-auth"]["secret"]["secretName"] == "kop-pulsar-token"
    # a directory mount: a subPath would never see the rotated token
    assert mounts["pulsar-auth"] == {
        "name": "pulsar-auth",
        "mountPath": "/etc/kop/pulsar-auth",
        "readOnly": True,
    }
    toml = rendered.kop_toml
    assert toml["pulsar_auth_plugin"] == "token"
    assert toml["pulsar_auth_params"] == "file:///etc/kop/pulsar-auth/token"
    assert volumes["pulsar-tls"]["secret"]["secretName"] == "pulsar-ca"
    assert toml["pulsar_tls_trust_certs_file"] == "/etc/kop/pulsar-tls/ca.crt"
    assert mounts["pulsar-tls"]["mountPath"] == "/etc/kop/pulsar-tls"
    # what kop does with that file: reads it, and again when the kubelet rotates it
    token = tmp_path / "pulsar-auth" / "token"
    token.parent.mkdir()
    token.write_text("first\n")
    auth = TokenAuth(toml["pulsar_auth_params"].replace("/etc/kop", str(tmp_path)))
    assert auth.token() == "first"
    token.write_text("rotated-token\n")
    assert auth.token() == "rotated-token"


def test_oauth2_params_point_at_the_mounted_credentials() -> None:
    rendered = render(OAUTH2_LB)
    volumes, mounts = _volumes(rendered)
    assert volumes["pulsar-auth"]["secret"]["items"] == [
        {"key": "credentials.json", "path": "credentials.json"}
    ]
    assert "subPath" not in mounts["pulsar-auth"]
    params = json.loads(rendered.kop_toml["pulsar_auth_params"])
    assert params == {
        "type": "client_credentials",
        "issuerUrl": "https://auth.example.com/",
        "audience": "urn:pulsar:cluster",
        "privateKey": "file:///etc/kop/pulsar-auth/credentials.json",
    }


def test_client_certificate_from_the_tls_secret() -> None:
    rendered = render(MTLS)
    volumes, _ = _volumes(rendered)
    assert "pulsar-auth" not in volumes
    assert volumes["pulsar-tls"]["secret"]["secretName"] == "kop-client-cert"
    toml = rendered.kop_toml
    assert toml["pulsar_auth_plugin"] == "tls"
    assert toml["pulsar_tls_cert_file"] == "/etc/kop/pulsar-tls/tls.crt"
    assert toml["pulsar_tls_key_file"] == "/etc/kop/pulsar-tls/tls.key"
    assert toml["pulsar_tls_hostname_verification"] is False
    assert toml["pulsar_listener_name"] == "internal"


def test_free_form_config_reaches_kop_toml_as_typed() -> None:
    """New kop settings need no chart change; TOML keeps their types."""
    toml = render(TOKEN_TLS, sets=("config.some_future_key=7",)).kop_toml
    assert toml["some_future_key"] == 7
    assert toml["default_entry_format"] == "kafka"
    assert toml["tail_buffer_bytes"] == 536870912
    assert toml["idle_timeout_s"] == 300.5
    assert toml["member_ttl_s"] == 6


def test_a_config_change_rolls_the_pods() -> None:
    def checksum(rendered: Rendered) -> str:
        meta = rendered.one("StatefulSet")["spec"]["template"]["metadata"]
        return str(meta["annotations"]["checksum/config"])

    assert checksum(render()) != checksum(render(sets=("config.log_level=DEBUG",)))


@pytest.mark.parametrize(
    "bad, why",
    [
        ("replicas=3", "additional properties 'replicas' not allowed"),
        ("pulsar.auth.plugin=token", "/pulsar/auth/secretName"),
        ("pulsar.auth.plugin=kerberos", "/pulsar/auth/plugin"),
        ("pulsar.serviceUrl=http://pulsar:8080", "/pulsar/serviceUrl"),
        ("ports.admin=0", "/ports/admin"),
        ("config.port=9093", "'not' failed"),  # set through ports.kafka
        ("config.node_id=1", "'not' failed"),  # the pod's ordinal
        ("config.Bad-Key=1", "invalid propertyName"),
        ("config.listeners=x", "'not' failed"),  # set through kafkaSecurity
        ("kafkaSecurity.mechanisms[0]=GSSAPI", "/kafkaSecurity/mechanisms"),
        ("externalAccess.enabled=true,externalAccess.type=LoadBalancer", "/externalAccess"),
        ("podAntiAffinity=sometimes", "/podAntiAffinity"),
        ("replicaCount=257", "/replicaCount"),  # node ids are 0-255
        ("kafkaSecurity.tls.certManager.duration=90d", "/kafkaSecurity/tls/certManager/duration"),
    ],
)
def test_schema_refuses_bad_values(bad: str, why: str) -> None:
    for command in ("lint", "template"):
        run = helm(command, str(CHART), "--set", bad, check=False)
        assert run.returncode != 0, f"helm {command} --set {bad} passed"
        assert why in run.stdout + run.stderr


def test_service_monitor_scrapes_each_pod_once() -> None:
    assert not render().kinds("ServiceMonitor")
    rendered = render(TOKEN_TLS)
    monitor = rendered.one("ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert monitor["spec"]["endpoints"] == [
        {
            "port": "admin",
            "path": "/metrics",
            "interval": "15s",
            "scrapeTimeout": "10s",
            "honorLabels": True,
            # /metrics needs the admin token (docs/security.md, "The admin HTTP API")
            "authorization": {
                "type": "Bearer",
                "credentials": {"name": "kop-admin-token", "key": "token"},
            },
        }
    ]
    wanted = monitor["spec"]["selector"]["matchLabels"]
    selected = [
        s["metadata"]["name"]
        for s in rendered.kinds("Service")
        if wanted.items() <= s["metadata"]["labels"].items()
    ]
    assert selected == ["kop-headless"]  # one target per pod, not also the bootstrap's
    ports = [p["name"] for p in rendered.one("Service", "kop-headless")["spec"]["ports"]]
    assert "admin" in ports


def test_the_admin_token_is_a_secret_kop_and_the_service_monitor_share(tmp_path: Path) -> None:
    """The admin HTTP's token: made once in a Secret of the release (or a Secret of the
    user's), given to kop as KOP_ADMIN_TOKEN (a setting, not refused) and sent by the
    ServiceMonitor; never in the ConfigMap."""
    rendered = render(TOKEN_TLS)
    secret = rendered.one("Secret", "kop-admin-token")
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert len(token) == 48 and token.isalnum()
    assert base64.b64decode(render().one("Secret", "kop-admin-token")["data"]["token"]) != token
    ref = {"name": "kop-admin-token", "key": "token"}
    env = {v["name"]: v for v in rendered.container["env"]}
    assert env["KOP_ADMIN_TOKEN"]["valueFrom"] == {"secretKeyRef": ref}
    assert _pod_env(rendered, 0, tmp_path)["KOP_ADMIN_TOKEN"] == "from-kop-admin-token"
    assert not unknown_env({"KOP_ADMIN_TOKEN": token})
    endpoint = rendered.one("ServiceMonitor")["spec"]["endpoints"][0]
    assert endpoint["authorization"] == {"type": "Bearer", "credentials": ref}
    assert "admin_token" not in rendered.kop_toml
    assert "admin_token" not in rendered.one("ConfigMap", "kop")["data"]["kop.toml"]
    mine = render(
        TOKEN_TLS, sets=("adminToken.existingSecret=ops-tokens", "adminToken.secretKey=kop")
    )
    assert [s["metadata"]["name"] for s in mine.kinds("Secret")] == ["kop-cluster-secret"]
    ref = {"name": "ops-tokens", "key": "kop"}
    env = {v["name"]: v for v in mine.container["env"]}
    assert env["KOP_ADMIN_TOKEN"]["valueFrom"] == {"secretKeyRef": ref}
    assert mine.one("ServiceMonitor")["spec"]["endpoints"][0]["authorization"]["credentials"] == ref
    run = helm("template", str(CHART), "--set", "config.admin_token=x", check=False)
    assert run.returncode != 0 and "'not' failed" in run.stdout + run.stderr


def test_every_pod_gets_the_same_generated_cluster_secret(tmp_path: Path) -> None:
    """Several instances refuse to start without one cluster secret: the chart makes it once
    (48 random characters, kept across upgrades), hands it to every pod as
    KOP_CLUSTER_SECRET from the Secret, and never writes it into the ConfigMap; a Secret of
    the user's replaces it, and `config.cluster_secret` (which would land in the
    ConfigMap) is refused."""
    rendered = render(sets=("replicaCount=3",))
    secret = rendered.one("Secret", "kop-cluster-secret")
    value = base64.b64decode(secret["data"]["secret"]).decode()
    assert len(value) == 48 and value.isalnum()
    assert base64.b64decode(render().one("Secret", "kop-cluster-secret")["data"]["secret"]) != value
    env = {v["name"]: v for v in rendered.container["env"]}
    ref = {"name": "kop-cluster-secret", "key": "secret"}
    assert env["KOP_CLUSTER_SECRET"]["valueFrom"] == {"secretKeyRef": ref}
    pods = [_pod_env(rendered, n, tmp_path)["KOP_CLUSTER_SECRET"] for n in range(3)]
    assert pods == ["from-kop-cluster-secret"] * 3
    assert load_config(environ={"KOP_CLUSTER_SECRET": value}).cluster_secret is not None
    assert "cluster_secret" not in rendered.one("ConfigMap", "kop")["data"]["kop.toml"]
    mine = render(sets=("clusterSecret.existingSecret=ops", "clusterSecret.secretKey=kop"))
    assert [s["metadata"]["name"] for s in mine.kinds("Secret")] == ["kop-admin-token"]
    env = {v["name"]: v for v in mine.container["env"]}
    assert env["KOP_CLUSTER_SECRET"]["valueFrom"] == {"secretKeyRef": {"name": "ops", "key": "kop"}}
    run = helm("template", str(CHART), "--set", "config.cluster_secret=x", check=False)
    assert run.returncode != 0 and "'not' failed" in run.stdout + run.stderr


def test_bootstrap_service() -> None:
    rendered = render()
    service = rendered.one("Service", "kop")
    assert service["spec"]["type"] == "ClusterIP"
    assert {p["name"]: p["port"] for p in service["spec"]["ports"]} == {
        "kafka": 9092,
        "admin": 9094,
        "schema-registry": 8081,
    }
    pod_labels = rendered.one("StatefulSet")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()


def test_the_schema_registry_port_is_served_and_can_be_turned_off() -> None:
    rendered = render()
    assert rendered.kop_toml["schema_registry_port"] == 8081
    ports = {p["name"]: p["containerPort"] for p in rendered.container["ports"]}
    assert ports["schema-registry"] == 8081
    off = render(sets=("ports.schemaRegistry=0",))
    assert off.kop_toml["schema_registry_port"] == 0
    assert "schema-registry" not in {p["name"] for p in off.container["ports"]}
    for service in off.kinds("Service"):
        assert "schema-registry" not in {p["name"] for p in service["spec"]["ports"]}


def test_node_ports_per_pod(tmp_path: Path) -> None:
    rendered = render(TOKEN_TLS)
    for ordinal in range(3):
        service = rendered.one("Service", f"kop-{ordinal}-external")
        assert service["spec"]["type"] == "NodePort"
        assert service["spec"]["selector"]["statefulset.kubernetes.io/pod-name"] == f"kop-{ordinal}"
        assert service["spec"]["ports"][0]["nodePort"] == 31092 + ordinal
        assert service["spec"]["ports"][0]["targetPort"] == "kafka-external"
        env = _pod_env(rendered, ordinal, tmp_path, host_ip="192.0.2.7")
        # clients inside are told the pod's name; those that come in through EXTERNAL, its node
        assert env["KOP_ADVERTISED_HOST"] == f"kop-{ordinal}.kop-headless.{NAMESPACE}.svc"
        assert env["KOP_ADVERTISED_LISTENERS"] == f"EXTERNAL://192.0.2.7:{31092 + ordinal}"
        assert env["KOP_NODE_ID"] == str(ordinal)
        assert env["KOP_MAX_CONNECTIONS"] == "2000"  # extraEnv


def test_load_balancers_per_pod(tmp_path: Path) -> None:
    rendered = render(OAUTH2_LB)
    for ordinal in range(2):
        service = rendered.one("Service", f"kop-{ordinal}-external")
        assert service["spec"]["type"] == "LoadBalancer"
        assert service["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24"]
        assert service["spec"]["ports"][0]["port"] == 9092
        env = _pod_env(rendered, ordinal, tmp_path)
        assert env["KOP_ADVERTISED_LISTENERS"] == f"EXTERNAL://kop-{ordinal}.kafka.example.com:9092"
    too_few = helm(
        "template", str(CHART), "-f", str(OAUTH2_LB), "--set", "replicaCount=3", check=False
    )
    assert too_few.returncode != 0
    assert "externalAccess.hosts names 2 host(s) for 3 replicas" in too_few.stderr


def test_disruption_budget_and_spreading() -> None:
    rendered = render()
    pdb = rendered.one("PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    pod = rendered.one("StatefulSet")["spec"]["template"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    soft = pod["spec"]["affinity"]["podAntiAffinity"]
    assert (
        soft["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["topologyKey"]
        == "kubernetes.io/hostname"
    )
    hard = render(OAUTH2_LB).one("StatefulSet")["spec"]["template"]["spec"]["affinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" in hard["podAntiAffinity"]
    none = render(sets=("podAntiAffinity=none",)).one("StatefulSet")["spec"]["template"]["spec"]
    assert "affinity" not in none


def _notes(tmp_path: Path, *sets: str, values: tuple[Path, ...] = ()) -> str:
    """NOTES.txt as `helm install` would print it: `helm template` does not render
    it, so a copy of the chart renders it into a ConfigMap."""
    chart = tmp_path / "kop"
    shutil.copytree(CHART, chart)
    (chart / "notes.txt").write_text((chart / "templates" / "NOTES.txt").read_text())
    (chart / "templates" / "zz-notes.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n"
        '  notes: {{ tpl (.Files.Get "notes.txt") . | toJson }}\n'
    )
    notes = render(*values, sets=sets, chart=chart).one("ConfigMap", "notes")
    return str(notes["data"]["notes"])


def test_notes(tmp_path: Path) -> None:
    notes = _notes(tmp_path)
    assert "bootstrap.servers=kop.kafka.svc:9092" in notes
    assert "kop-0.kop-headless.kafka.svc:9092" in notes
    assert "With replicaCount: 3 the others" in notes  # one instance: no failover
    assert "get secret kop-admin-token -o jsonpath='{.data.token}' | base64 -d" in notes
    three = _notes(tmp_path / "three", "replicaCount=3")
    assert "replicaCount: 3" not in three
    assert "kop-2.kop-headless.kafka.svc:9092" in three


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["name"] == "kop" and chart["apiVersion"] == "v2"
    assert render().container["image"] == f"kop:{chart['appVersion']}"


def test_kafka_listeners_tls_and_token_key_from_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each pod serves PLAINTEXT, SASL_SSL and SSL, advertised at its own address (kop
    pairs an any-interface listener with KOP_ADVERTISED_HOST), with the listeners'
    certificate and the brokers' token key mounted from Secrets, and the ports on the
    pod and on both Services."""
    rendered = render(SASL_SSL)
    toml = rendered.kop_toml
    assert toml["listeners"] == (
        "PLAINTEXT://0.0.0.0:9092,SASL_SSL://0.0.0.0:9093,SSL://0.0.0.0:9096"
    )
    assert toml["sasl_enabled_mechanisms"] == "PLAIN,SCRAM-SHA-512"
    assert toml["ssl_cert_file"] == "/etc/kop/kafka-tls/tls.crt"
    assert toml["ssl_ca_file"] == "/etc/kop/kafka-tls/ca.crt"
    assert toml["ssl_client_auth"] == "requested"
    assert toml["auth_token_secret_key"] == "file:///etc/kop/token-key/token-secret.key"
    assert toml["superuser_roles"] == "admin"
    volumes, mounts = _volumes(rendered)
    assert volumes["kafka-tls"]["secret"]["secretName"] == "kop-kafka-tls"
    assert volumes["token-key"]["secret"]["secretName"] == "pulsar-token-key"
    assert mounts["kafka-tls"]["mountPath"] == "/etc/kop/kafka-tls"
    ports = {p["name"]: p["containerPort"] for p in rendered.container["ports"]}
    assert ports == {
        "kafka": 9092, "admin": 9094, "schema-registry": 8081, "sasl-ssl": 9093, "ssl": 9096,
    }  # fmt: skip
    for service in rendered.kinds("Service"):
        names = {p["name"] for p in service["spec"]["ports"]}
        assert {"sasl-ssl", "ssl"} <= names, service["metadata"]["name"]
    # what kop makes of it in pod kop-1
    files = {"kafka-tls/tls.crt": "PEM", "kafka-tls/tls.key": "PEM", "kafka-tls/ca.crt": "PEM"}
    for name in [n for n in os.environ if n.startswith("KOP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KOP_ADVERTISED_HOST", "kop-1.kop-headless.kafka.svc")
    config = load_config(_local_config(rendered, tmp_path, files), environ={})
    advertised = {lst.protocol.value: str(lst.advertised) for lst in config.listener_plan()}
    assert advertised["SASL_SSL"] == "SASL_SSL://kop-1.kop-headless.kafka.svc:9093"
    assert config.authorizing


def test_external_access_is_a_listener_of_its_own_with_its_security(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SASL_SSL inside and outside: clients inside get the pods' names on the SASL_SSL
    listener, clients outside get each pod's load balancer on EXTERNAL (SASL_SSL too)."""
    rendered = render(SASL_SSL, sets=(
        "externalAccess.enabled=true", "externalAccess.type=LoadBalancer",
        "externalAccess.protocol=SASL_SSL", "replicaCount=2",
        "externalAccess.hosts[0]=kafka-0.example.com",
        "externalAccess.hosts[1]=kafka-1.example.com",
    ))  # fmt: skip
    toml = rendered.kop_toml
    assert toml["listeners"].endswith(",EXTERNAL://0.0.0.0:9098")
    assert toml["listener_security_protocol_map"] == "EXTERNAL:SASL_SSL"
    ports = {p["name"]: p["containerPort"] for p in rendered.container["ports"]}
    assert ports["kafka-external"] == 9098
    env = _pod_env(rendered, 1, tmp_path)
    files = {"kafka-tls/tls.crt": "PEM", "kafka-tls/tls.key": "PEM", "kafka-tls/ca.crt": "PEM"}
    for name in [n for n in os.environ if n.startswith("KOP_")]:
        monkeypatch.delenv(name)
    for name in ("KOP_ADVERTISED_HOST", "KOP_ADVERTISED_LISTENERS"):
        monkeypatch.setenv(name, env[name])
    config = load_config(_local_config(rendered, tmp_path, files), environ={})
    advertised = {lst.name: str(lst.advertised) for lst in config.listener_plan()}
    assert advertised["SASL_SSL"] == f"SASL_SSL://kop-1.kop-headless.{NAMESPACE}.svc:9093"
    assert advertised["EXTERNAL"] == "EXTERNAL://kafka-1.example.com:9092"
    external = {lst.name: lst.protocol.value for lst in config.listener_plan()}["EXTERNAL"]
    assert external == "SASL_SSL"


def test_cert_manager_makes_the_certificate_every_advertised_name_is_checked_against() -> None:
    """A client checks the name it was told (a pod's DNS name inside, the external host
    outside, the bootstrap Service first): the Certificate covers each, and the pods
    mount the Secret cert-manager fills, re-read on renewal."""
    rendered = render(CERT_MANAGER)
    cert = rendered.one("Certificate")
    assert cert["apiVersion"] == "cert-manager.io/v1"
    spec = cert["spec"]
    assert spec["issuerRef"] == {
        "name": "platform-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"
    }  # fmt: skip
    assert spec["dnsNames"] == [
        "kop", f"kop.{NAMESPACE}.svc", f"*.kop-headless.{NAMESPACE}.svc",
        "kafka-0.example.com", "kafka-1.example.com", "kafka.example.com",
    ]  # fmt: skip
    assert spec["privateKey"]["rotationPolicy"] == "Always"
    volumes, mounts = _volumes(rendered)
    assert volumes["kafka-tls"]["secret"]["secretName"] == spec["secretName"] == "kop-kafka-tls"
    assert mounts["kafka-tls"]["mountPath"] == "/etc/kop/kafka-tls"
    toml = rendered.kop_toml
    assert toml["ssl_cert_file"] == "/etc/kop/kafka-tls/tls.crt"
    assert toml["ssl_ca_file"] == "/etc/kop/kafka-tls/ca.crt"
    assert toml["listener_security_protocol_map"] == "EXTERNAL:SASL_SSL"
    theirs = render(CERT_MANAGER, sets=("kafkaSecurity.tls.secretName=named",))
    assert theirs.one("Certificate")["spec"]["secretName"] == "named"
    assert _volumes(theirs)[0]["kafka-tls"]["secret"]["secretName"] == "named"
    assert not render(SASL_SSL).kinds("Certificate")
    no_issuer = "kafkaSecurity.tls.certManager.issuerRef.name="
    unsigned = helm(
        "template", "kop", str(CHART), "-f", str(CERT_MANAGER), "--set", no_issuer, check=False
    )
    assert unsigned.returncode != 0 and "issuerRef.name" in unsigned.stderr


def test_an_ingress_passes_tls_through_to_each_pod_by_the_host_it_advertises(
    tmp_path: Path,
) -> None:
    """Strimzi's way out of a cluster without a load balancer per pod: an ingress
    controller routes TLS by its SNI, unopened, to the pod whose host the client named
    (so kop ends the TLS: SASL_SSL here), and each pod advertises its host on 443."""
    rendered = render(INGRESS)
    routes = {}
    for ingress in rendered.kinds("Ingress"):
        annotations = ingress["metadata"]["annotations"]
        assert annotations["nginx.ingress.kubernetes.io/ssl-passthrough"] == "true"
        assert ingress["spec"]["ingressClassName"] == "nginx"
        (rule,) = ingress["spec"]["rules"]
        (path,) = rule["http"]["paths"]
        assert path["backend"]["service"]["port"] == {"number": 9098}
        routes[rule["host"]] = path["backend"]["service"]["name"]
    assert routes == {
        "kafka.example.com": "kop-external-bootstrap",
        **{f"kafka-{i}.example.com": f"kop-{i}-external" for i in range(3)},
    }
    bootstrap = rendered.one("Service", "kop-external-bootstrap")["spec"]
    assert "statefulset.kubernetes.io/pod-name" not in bootstrap["selector"]  # any pod
    for ordinal in range(3):
        service = rendered.one("Service", f"kop-{ordinal}-external")["spec"]
        assert service["type"] == "ClusterIP" and "externalTrafficPolicy" not in service
        assert service["ports"][0]["targetPort"] == "kafka-external"
        env = _pod_env(rendered, ordinal, tmp_path)
        assert env["KOP_ADVERTISED_LISTENERS"] == f"EXTERNAL://kafka-{ordinal}.example.com:443"
    assert rendered.kop_toml["listener_security_protocol_map"] == "EXTERNAL:SASL_SSL"
    names = rendered.one("Certificate")["spec"]["dnsNames"]
    assert {"kafka.example.com", "kafka-0.example.com", "kafka-2.example.com"} <= set(names)
    rules = rendered.one("NetworkPolicy")["spec"]["ingress"]
    external = [r for r in rules if r["ports"] == [{"port": "kafka-external"}]]
    assert external == [{"ports": [{"port": "kafka-external"}], "from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
    ]}]  # fmt: skip
    notes = _notes(tmp_path / "notes", values=(INGRESS,))
    assert "bootstrap.servers=kafka.example.com:443" in notes
    assert "node 2: kafka-2.example.com:443" in notes
    for sets, why in (
        (("externalAccess.protocol=PLAINTEXT",), "/externalAccess/protocol"),
        (("externalAccess.ingress.bootstrapHost=",), "bootstrapHost"),
        (("replicaCount=4",), "externalAccess.hosts names 3 host(s) for 4 replicas"),
    ):
        refused = helm("template", "kop", str(CHART), "-f", str(INGRESS),
                       *(a for s in sets for a in ("--set", s)), check=False)  # fmt: skip
        assert refused.returncode != 0 and why in refused.stderr, (sets, refused.stderr)


def test_security_listeners_refuse_what_cannot_work() -> None:
    for sets, why in (
        (("kafkaSecurity.saslSslPort=9093",), "needs kafkaSecurity.tls.secretName"),
        (("externalAccess.enabled=true", "externalAccess.protocol=SASL_SSL"),
         "needs kafkaSecurity.tls.secretName"),
        (("externalAccess.enabled=true", "externalAccess.protocol=TLS"), "protocol"),
        (("kafkaSecurity.plaintext=false",), "no listener left"),
    ):  # fmt: skip
        run = helm("template", "kop", str(CHART), *[f"--set={s}" for s in sets], check=False)
        assert run.returncode != 0 and why in run.stderr, (sets, run.stderr)
