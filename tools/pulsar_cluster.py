#!/usr/bin/env python3
"""Provision and run a small Apache Pulsar cluster like the ones kop's users run.

One ZooKeeper, one bookie, two brokers and a Pulsar proxy, each its own JVM with
its own ports and data, the brokers on Pulsar's production defaults (see
tools/cluster_conf.py), optionally with token authentication and authorization
(--auth) and TLS (--tls). Stdlib only, like tools/pulsar.py, whose shared core
(tools/provision.py) it composes: the jars are resolved from Maven Central
(tools/pulsar-cluster/pom.xml) into the cache, every JVM runs detached with a
pid file and a log, and `stop` stops only the JVMs this tool started.

Subcommands::

    python3 tools/pulsar_cluster.py fetch                           # resolve the jars
    python3 tools/pulsar_cluster.py start [--auth] [--tls] [--fresh]  # start or reuse
    python3 tools/pulsar_cluster.py status                          # exit 0 if all healthy
    python3 tools/pulsar_cluster.py env [--json]                    # URLs, tokens, CA
    python3 tools/pulsar_cluster.py stop                            # proxy, brokers, bookie, ZK

Environment:
    KOP_CACHE_DIR               cache root (default ~/.cache/kop)
    KOP_PULSAR_CLUSTER_DATA            data dir (default <cache>/pulsar-cluster-data)
    KOP_PULSAR_CLUSTER_PORT_OFFSET     added to every default port (default 0)
    KOP_PULSAR_CLUSTER_START_TIMEOUT   seconds each service may take to become healthy (default 180)
    KOP_PULSAR_CLUSTER_STOP_TIMEOUT    seconds after SIGTERM before SIGKILL (default 60)
    KOP_PULSAR_CLUSTER_<KIND>_JVM_OPTS replaces the heap/GC options of ZOOKEEPER, BOOKIE,
                                BROKER or PROXY
    KOP_MAVEN_SETTINGS, KOP_MAVEN_ARGS  as for tools/pulsar.py

See docs/pulsar.md, "A Pulsar cluster like production".
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import cluster_conf as cc
import provision
import pulsar as standalone  # tools/pulsar.py (this directory is sys.path[0])
from cluster_conf import Layout, Mode
from cluster_security import Certificates, Tokens
from provision import Health, Tool, fail

PROG = "tools/pulsar_cluster.py"
TAG = "pulsar-cluster"
TOOL = Tool(PROG, TAG, "Pulsar cluster")
say = TOOL.say
POM = provision.REPO_ROOT / "tools" / "pulsar-cluster" / "pom.xml"
DEFAULT_START_TIMEOUT = 180.0
# A broker's own shutdown may take brokerShutdownTimeoutMs (60 s by default).
DEFAULT_STOP_TIMEOUT = 60.0
SETUP_TIMEOUT = 120.0
# A killed bookie's ZooKeeper session expires within its session timeout (at most
# ZooKeeper's maxSessionTimeout, 20 ticks = 40 s here) after ZooKeeper starts.
STALE_BOOKIE_TIMEOUT = 90.0

MAIN_CLASS = {
    "zookeeper": "org.apache.zookeeper.server.quorum.QuorumPeerMain",
    "bookie": "org.apache.bookkeeper.server.Main",
    "broker": "org.apache.pulsar.PulsarBrokerStarter",
    "proxy": "org.apache.pulsar.proxy.server.ProxyServiceStarter",
}
SETUP_MAIN = "org.apache.pulsar.PulsarClusterMetadataSetup"


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    cache_dir: Path
    layout: Layout
    start_timeout: float
    stop_timeout: float

    @property
    def dist(self) -> provision.Dist:
        return provision.Dist(
            product="Pulsar cluster",
            version=cc.PULSAR_VERSION,
            pom=POM,
            dir=self.cache_dir / f"pulsar-cluster-{cc.PULSAR_VERSION}",
            properties={
                "pulsar.version": cc.PULSAR_VERSION,
                "pulsar.proxy.version": cc.PROXY_VERSION,
            },
            required_jars=(
                f"pulsar-broker-{cc.PULSAR_VERSION}.jar",
                f"pulsar-proxy-{cc.PROXY_VERSION}.jar",
                f"bookkeeper-server-{cc.BOOKKEEPER_VERSION}.jar",
            ),
        )


def load_settings(args: argparse.Namespace) -> Settings:
    place = provision.load_place(
        args, "KOP_PULSAR_CLUSTER", [], DEFAULT_START_TIMEOUT, DEFAULT_STOP_TIMEOUT
    )
    data_dir = place.data_dir
    if not (getattr(args, "data_dir", None) or os.environ.get("KOP_PULSAR_CLUSTER_DATA")):
        data_dir = place.cache_dir / "pulsar-cluster-data"  # not load_place's pulsar_cluster-data
    return Settings(
        cache_dir=place.cache_dir,
        layout=Layout(data_dir=data_dir, offset=cc.load_offset()),
        start_timeout=place.start_timeout,
        stop_timeout=place.stop_timeout,
    )


# --------------------------------------------------------------------------- services


@dataclass(frozen=True)
class Service:
    """One JVM of the cluster."""

    name: str  # "broker-1": its directory, pid file, log and progress lines
    kind: str  # "broker": its main class and JVM options
    ports: tuple[int, ...]  # every port it binds in this mode
    index: int = 0  # which broker

    def dir(self, lay: Layout) -> Path:
        return lay.service_dir(self.name)

    def conf(self, lay: Layout) -> Path:
        return lay.conf(self.name)

    def log(self, lay: Layout) -> Path:
        return self.dir(lay) / f"{self.name}.log"

    def jvm(self, s: Settings) -> provision.Broker:
        lay = s.layout
        return provision.Broker(
            tool=Tool(PROG, TAG, self.name),
            pid_file=self.dir(lay) / f"{self.name}.pid",
            logs=(self.log(lay),),
            # The main class and this service's own config path: two brokers share
            # the class, and a pid file may outlive its JVM (pid reuse).
            markers=(MAIN_CLASS[self.kind], str(self.conf(lay))),
            start_timeout=s.start_timeout,
            stop_timeout=s.stop_timeout,
            timeout_env="KOP_PULSAR_CLUSTER_START_TIMEOUT",
        )

    def args(self, lay: Layout) -> list[str]:
        conf = str(self.conf(lay))
        return {
            "zookeeper": [conf],
            "bookie": ["--conf", conf],
            "broker": ["--broker-conf", conf],
            "proxy": ["--config", conf],
        }[self.kind]

    def render(self, lay: Layout, mode: Mode) -> str:
        settings = {
            "zookeeper": lambda: cc.zookeeper_conf(lay),
            "bookie": lambda: cc.bookie_conf(lay),
            "broker": lambda: cc.broker_conf(lay, self.index, mode),
            "proxy": lambda: cc.proxy_conf(lay, mode),
        }[self.kind]()
        return cc.render(settings, f"{self.name} ({mode.text()})")


def services(lay: Layout, mode: Mode) -> list[Service]:
    """In start order; `stop` goes backwards."""

    def ports(e: cc.Endpoints) -> tuple[int, ...]:
        return (e.binary, e.http, *((e.binary_tls, e.http_tls) if mode.tls else ()))

    return [
        Service("zookeeper", "zookeeper", (lay.zk_port,)),
        Service("bookie", "bookie", (lay.bookie_port,)),
        *(
            Service(f"broker-{i + 1}", "broker", ports(b), index=i)
            for i, b in enumerate(lay.brokers)
        ),
        Service("proxy", "proxy", ports(lay.proxy)),
    ]


def jvm_command(s: Settings, svc: Service) -> list[str]:
    lay = s.layout
    d = svc.dir(lay)
    (d / "tmp").mkdir(parents=True, exist_ok=True)
    return [
        provision.require_java(),
        *provision.jvm_opts(
            f"KOP_PULSAR_CLUSTER_{svc.kind.upper()}_JVM_OPTS", cc.JVM_OPTS[svc.kind]
        ),
        *standalone.JVM_REQUIRED_OPTS,
        f"-Dlog4j.configurationFile={lay.data_dir / 'log4j2.xml'}",
        f"-Djava.io.tmpdir={d / 'tmp'}",
        f"-Xlog:gc:file={d / 'gc.log'}:time,uptime:filecount=3,filesize=10m",
        "-cp",
        s.dist.classpath,
        MAIN_CLASS[svc.kind],
        *svc.args(lay),
    ]


# --------------------------------------------------------------------------- state


def read_mode(lay: Layout) -> Mode | None:
    """The mode of the last `start` on this data dir (what its configs were rendered for)."""
    try:
        info = json.loads(lay.state_file.read_text())
        return Mode(auth=bool(info["auth"]), tls=bool(info["tls"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_mode(lay: Layout, mode: Mode) -> None:
    lay.state_file.write_text(
        json.dumps(
            {
                "auth": mode.auth,
                "tls": mode.tls,
                "pulsar_version": cc.PULSAR_VERSION,
                "proxy_version": cc.PROXY_VERSION,
                "port_offset": lay.offset,
            },
            indent=2,
        )
        + "\n"
    )


# --------------------------------------------------------------------------- HTTP, probes


_PLAIN = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class Client:
    """How the tool talks to the cluster: as the superuser, trusting the cluster's CA."""

    lay: Layout
    mode: Mode

    @property
    def token(self) -> str | None:
        if not self.mode.auth:
            return None
        try:
            return cc.token_path(self.lay, cc.ADMIN_ROLE).read_text().strip()
        except OSError:
            return None

    @property
    def ca(self) -> Path:
        return self.lay.tls_dir / "ca.cert.pem"

    def http(
        self, method: str, url: str, body: object = None, timeout: float = 10.0
    ) -> tuple[int, str]:
        """(status, body); status 0 means nothing answered."""
        headers = {}
        token = self.token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        opener = _PLAIN
        if url.startswith("https:"):
            ctx = ssl.create_default_context(cafile=str(self.ca))
            opener = urllib.request.build_opener(
                urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx)
            )
        try:
            with opener.open(req, timeout=timeout) as resp:
                return resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            try:
                text = e.read().decode("utf-8", "replace")
            except Exception:  # best effort: body of an error response
                text = ""
            return e.code, text
        except (urllib.error.URLError, OSError, TimeoutError, ssl.SSLError) as e:
            reason = getattr(e, "reason", e)
            return 0, str(reason)


def zk_command(port: int, command: str, timeout: float = 3.0) -> str:
    """A ZooKeeper four-letter word ("ruok", "dump"); "" if nothing answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(command.encode("ascii"))
            sock.shutdown(socket.SHUT_WR)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", "replace")
    except OSError:
        return ""


def await_stale_bookie_gone(c: Client) -> None:
    """Wait until a previous bookie's registration has expired.

    A bookie that was killed (or a ZooKeeper restored from a copy of a running one) leaves
    its ephemeral node until ZooKeeper expires the dead session. A bookie started before
    then cannot register ("already locked"), shuts its server down, and the brokers fail
    every ledger recovery with -8/-10 while the stale node still looks like a healthy bookie.
    """
    node = f"/ledgers/available/localhost:{c.lay.bookie_port}"
    if node not in zk_command(c.lay.zk_port, "dump"):
        return
    start = time.monotonic()
    say(f"a dead bookie's registration {node} is still in ZooKeeper; waiting for it to expire")
    deadline = start + STALE_BOOKIE_TIMEOUT
    next_line = start + 10
    while node in zk_command(c.lay.zk_port, "dump"):
        now = time.monotonic()
        if now > deadline:
            fail(
                f"{node} was still registered after {STALE_BOOKIE_TIMEOUT:.0f} s, "
                f"with no bookie running; `{PROG} start --fresh` wipes the data dir"
            )
        if now >= next_line:
            say(f"still waiting for {node} to expire... {now - start:.0f} s elapsed")
            next_line += 10
        time.sleep(0.5)
    say(f"the dead bookie's registration expired after {time.monotonic() - start:.1f} s")


def probe(c: Client, svc: Service, timeout: float = 10.0) -> Health:
    """Is this one service healthy, by the service's own standard?"""
    lay = c.lay
    if svc.kind == "zookeeper":
        answer = zk_command(lay.zk_port, "ruok")
        if answer == "imok":
            return Health(True, f"ZooKeeper answers imok on localhost:{lay.zk_port}")
        return Health(False, f"ZooKeeper on port {lay.zk_port} answers {answer[:60]!r} to ruok")
    if svc.kind == "bookie":
        bookie_id = f"localhost:{lay.bookie_port}"
        if not provision.port_open(lay.bookie_port):
            return Health(False, f"nothing listens on bookie port {lay.bookie_port}")
        if f"/ledgers/available/{bookie_id}" not in zk_command(lay.zk_port, "dump"):
            return Health(False, f"bookie {bookie_id} is not registered in ZooKeeper yet")
        return Health(True, f"bookie {bookie_id} registered (available)")
    if svc.kind == "broker":
        return _probe_broker(c, lay.brokers[svc.index], timeout)
    return _probe_proxy(c, timeout)


def _probe_broker(c: Client, e: cc.Endpoints, timeout: float) -> Health:
    base = f"http://localhost:{e.http}"
    status, body = c.http("GET", f"{base}/admin/v2/brokers/health", timeout=timeout)
    if status != 200 or body.strip() != "ok":
        what = "nothing answers" if status == 0 else f"HTTP {status} {body.strip()[:100]!r}"
        return Health(False, f"health check on {base}: {what}")
    if not provision.port_open(e.binary):
        return Health(False, f"nothing listens on binary port {e.binary}")
    if c.mode.tls:
        https = f"https://localhost:{e.http_tls}"
        status, body = c.http("GET", f"{https}/admin/v2/brokers/version", timeout=timeout)
        if status != 200:
            return Health(False, f"{https} answers {status} {body[:100]!r}")
        if not provision.port_open(e.binary_tls):
            return Health(False, f"nothing listens on TLS binary port {e.binary_tls}")
    return Health(True, f"broker healthy at pulsar://localhost:{e.binary} {base}")


def _probe_proxy(c: Client, timeout: float) -> Health:
    e = c.lay.proxy
    base = f"http://localhost:{e.http}"
    status, body = c.http("GET", f"{base}/metrics/", timeout=timeout)
    if status != 200:
        return Health(False, f"proxy {base}/metrics/ answers {status} {body[:100]!r}")
    # Through the proxy to a broker: the proxy found the brokers and forwards.
    urls = [base] + ([f"https://localhost:{e.http_tls}"] if c.mode.tls else [])
    for url in urls:
        status, body = c.http("GET", f"{url}/admin/v2/namespaces/public", timeout=timeout)
        if status != 200 or "public/default" not in body:
            return Health(False, f"proxy {url} lists namespaces of public: {status} {body[:100]!r}")
    if not provision.port_open(e.binary):
        return Health(False, f"nothing listens on proxy binary port {e.binary}")
    if c.mode.tls and not provision.port_open(e.binary_tls):
        return Health(False, f"nothing listens on proxy TLS binary port {e.binary_tls}")
    return Health(True, f"proxy healthy at pulsar://localhost:{e.binary} {base}")


def health_check(c: Client, svc: Service) -> Callable[[float], Health]:
    return lambda remaining: probe(c, svc, timeout=max(1.0, min(30.0, remaining)))


# --------------------------------------------------------------------------- setup steps


def initialize_metadata(s: Settings) -> None:
    """PulsarClusterMetadataSetup, once per data dir: the cluster, its URLs, the bookies'
    ledger layout, tenant public and public/default (16 bundles)."""
    lay = s.layout
    marker = lay.service_dir("zookeeper") / "metadata-initialized.json"
    if marker.is_file():
        return
    cmd = [
        provision.require_java(),
        "-Xmx256m",
        *standalone.JVM_REQUIRED_OPTS,
        f"-Dlog4j.configurationFile={lay.data_dir / 'log4j2.xml'}",
        "-cp",
        s.dist.classpath,
        SETUP_MAIN,
        "--cluster", cc.CLUSTER_NAME,
        "--metadata-store", lay.metadata_url,
        "--configuration-metadata-store", lay.metadata_url,
        "--web-service-url", lay.multi_host("http", "http"),
        "--web-service-url-tls", lay.multi_host("https", "http_tls"),
        "--broker-service-url", lay.multi_host("pulsar", "binary"),
        "--broker-service-url-tls", lay.multi_host("pulsar+ssl", "binary_tls"),
        "--default-namespace-bundle-number", str(cc.NAMESPACE_BUNDLES),
    ]  # fmt: skip
    log_file = lay.data_dir / "metadata-setup.log"
    say(f"initializing cluster metadata for {cc.CLUSTER_NAME} (log {log_file})")
    start = time.monotonic()
    with open(log_file, "w") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=lay.data_dir
        )
        try:
            proc.wait(timeout=SETUP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            fail(f"cluster metadata setup took over {SETUP_TIMEOUT:.0f} s; see {log_file}")
    if proc.returncode != 0:
        print(provision.log_tail(log_file), file=sys.stderr)
        fail(f"cluster metadata setup failed (exit code {proc.returncode}); see {log_file}")
    marker.write_text(json.dumps({"cluster": cc.CLUSTER_NAME, "at": time.time()}) + "\n")
    say(f"cluster metadata initialized in {time.monotonic() - start:.1f} s")


def ensure_tenants(c: Client) -> None:
    """public/default, and tenant kop (admin: the app role) with kop/default and kop/__kop.

    Idempotent: 409 (exists) is fine. Namespaces get NAMESPACE_BUNDLES bundles so
    their topics spread over both brokers.
    """
    base = f"http://localhost:{c.lay.brokers[0].http}/admin/v2"
    tenants: dict[str, list[str]] = {"public": [], cc.APP_TENANT: [cc.APP_ROLE]}
    namespaces = ["public/default", *cc.APP_NAMESPACES]
    for tenant, admins in tenants.items():
        if not _exists(c, f"{base}/tenants/{tenant}"):
            tenant_info = {"adminRoles": admins, "allowedClusters": [cc.CLUSTER_NAME]}
            _expect(c, "PUT", f"{base}/tenants/{tenant}", tenant_info, f"create tenant {tenant}")
    for ns in namespaces:
        if not _exists(c, f"{base}/namespaces/{ns}"):
            policies = {"bundles": {"numBundles": cc.NAMESPACE_BUNDLES}}
            _expect(c, "PUT", f"{base}/namespaces/{ns}", policies, f"create namespace {ns}")
            say(f"created namespace {ns} ({cc.NAMESPACE_BUNDLES} bundles)")
    if c.mode.auth:
        _expect(
            c,
            "POST",
            f"{base}/namespaces/{cc.APP_NAMESPACES[0]}/permissions/{cc.LIMITED_ROLE}",
            ["produce", "consume"],
            f"grant {cc.LIMITED_ROLE} produce+consume on {cc.APP_NAMESPACES[0]}",
        )


def _exists(c: Client, url: str) -> bool:
    """GET before PUT: a PUT of something that exists logs an ERROR in the broker."""
    status, text = c.http("GET", url, timeout=30.0)
    if status not in (200, 404):
        fail(f"GET {url}: HTTP {status} {text[:200]!r}")
    return status == 200


def _expect(c: Client, method: str, url: str, body: object, what: str) -> None:
    status, text = c.http(method, url, body, timeout=30.0)
    if status not in (200, 204, 409):
        fail(f"could not {what}: HTTP {status} {text[:200]!r}")


# --------------------------------------------------------------------------- commands


def cmd_fetch(args: argparse.Namespace) -> int:
    s = load_settings(args)
    with provision.tool_lock(TOOL, s.cache_dir):
        s.dist.fetch(TOOL)
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    s = load_settings(args)
    mode = Mode(auth=args.auth, tls=args.tls)
    with provision.tool_lock(TOOL, s.cache_dir):
        _start(s, mode, args.fresh)
    print(_how_to_use(s.layout, mode))
    return 0


def _running(s: Settings, svcs: list[Service]) -> dict[str, int]:
    return {svc.name: pid for svc in svcs if (pid := svc.jvm(s).running_pid()) is not None}


def _start(s: Settings, mode: Mode, fresh: bool) -> None:
    lay = s.layout
    svcs = services(lay, mode)
    running = _running(s, svcs)
    before = read_mode(lay)
    if fresh:
        if running:
            say("--fresh: stopping the cluster this tool started")
            _stop(s)
        if lay.data_dir.exists():
            say(f"--fresh: wiping {lay.data_dir}")
            shutil.rmtree(lay.data_dir)
        running = {}
    elif running and before is not None and before != mode:
        fail(
            f"the cluster in {lay.data_dir} is running with {before.text()}, and this start asks "
            f"for {mode.text()}; `{PROG} stop` it first (or add --fresh to also wipe its data)"
        )
    busy = [
        f"{p} ({svc.name})"
        for svc in svcs
        if svc.name not in running
        for p in svc.ports
        if provision.port_open(p)
    ]
    if busy:
        fail(
            f"port(s) {', '.join(busy)} in use by something this tool did not start (for "
            f"{lay.data_dir}); stop it, or move the cluster with KOP_PULSAR_CLUSTER_PORT_OFFSET"
        )

    provision.require_java()
    s.dist.fetch(TOOL)
    lay.data_dir.mkdir(parents=True, exist_ok=True)
    if mode.auth:
        Tokens(lay.security_dir).ensure(cc.ROLES)
    if mode.tls and Certificates(lay.tls_dir).ensure():
        say(f"made a CA and a server certificate in {lay.tls_dir}")
    (lay.data_dir / "log4j2.xml").write_text(standalone.LOG4J2_XML)
    for svc in svcs:
        svc.dir(lay).mkdir(parents=True, exist_ok=True)
        svc.conf(lay).write_text(svc.render(lay, mode))
    write_mode(lay, mode)

    c = Client(lay, mode)
    launched: list[tuple[Service, int]] = []
    started = time.monotonic()
    say(
        f"starting Pulsar {cc.PULSAR_VERSION} cluster {cc.CLUSTER_NAME} ({mode.text()}, data "
        f"{lay.data_dir})"
    )
    try:
        by_name = {svc.name: svc for svc in svcs}
        _bring_up(s, c, [by_name["zookeeper"]], running, launched)
        initialize_metadata(s)
        if "bookie" not in running:
            await_stale_bookie_gone(c)
        _bring_up(s, c, [by_name["bookie"]], running, launched)
        # The brokers and the proxy start at once (the proxy finds the brokers in
        # ZooKeeper when they register): the JVMs' start-up overlaps.
        _bring_up(s, c, [svc for svc in svcs if svc.kind in ("broker", "proxy")], running, launched)
        ensure_tenants(c)
    except BaseException:
        for svc, pid in reversed(launched):
            jvm = svc.jvm(s)
            if provision.is_our_process(pid, jvm.markers):
                say(f"stopping {svc.name} (pid {pid}), started by this run")
                jvm.terminate(pid)
            jvm.pid_file.unlink(missing_ok=True)
        raise
    verb = "reused" if not launched else "healthy"
    say(f"cluster {verb} after {time.monotonic() - started:.1f} s: {_rss_line(s, svcs)}")


def _bring_up(
    s: Settings,
    c: Client,
    group: list[Service],
    running: dict[str, int],
    launched: list[tuple[Service, int]],
) -> None:
    """Launch the services of group that are not running, then wait for each to be healthy."""
    procs: dict[str, tuple[subprocess.Popen[bytes], float]] = {}
    for svc in group:
        if svc.name in running:
            continue
        jvm = svc.jvm(s)
        proc = provision.launch(
            jvm_command(s, svc), log_file=svc.log(s.layout), pid_file=jvm.pid_file,
            cwd=svc.dir(s.layout),
        )  # fmt: skip
        procs[svc.name] = (proc, time.monotonic())
        launched.append((svc, proc.pid))
        say(f"starting {svc.name} (pid {proc.pid}, log {svc.log(s.layout)})")
    for svc in group:
        jvm = svc.jvm(s)
        if svc.name in procs:
            ours, launched_at = procs[svc.name]
            health = jvm.wait_healthy(health_check(c, svc), ours, ours.pid, launched_at)
            say(
                f"{svc.name}: {health.detail} ({time.monotonic() - launched_at:.1f} s after launch)"
            )
        else:
            pid = running[svc.name]
            health = jvm.wait_healthy(health_check(c, svc), None, pid, time.monotonic())
            say(f"reusing {svc.name} (pid {pid}): {health.detail}")


def _rss_line(s: Settings, svcs: list[Service]) -> str:
    parts = []
    for svc in svcs:
        pid = svc.jvm(s).running_pid()
        rss = provision.rss_mib(pid) if pid is not None else None
        parts.append(f"{svc.name} {rss:.0f} MiB" if rss is not None else f"{svc.name} -")
    return "RSS " + ", ".join(parts)


def cmd_stop(args: argparse.Namespace) -> int:
    s = load_settings(args)
    with provision.tool_lock(TOOL, s.cache_dir):
        _stop(s)
    return 0


def _stop(s: Settings) -> None:
    """Proxy, then both brokers at once (stopping one would move its bundles to the
    other first), then the bookie, then ZooKeeper; only JVMs this tool started."""
    svcs = services(s.layout, Mode(auth=False, tls=True))
    if not _running(s, svcs):
        for svc in svcs:
            svc.jvm(s).pid_file.unlink(missing_ok=True)
        say(f"no cluster started by this tool is running ({s.layout.data_dir}); nothing to stop")
        return
    proxy = [svc for svc in svcs if svc.kind == "proxy"]
    brokers = [svc for svc in svcs if svc.kind == "broker"]
    rest = [svc for svc in reversed(svcs) if svc.kind in ("bookie", "zookeeper")]
    for group in (proxy, brokers, *([svc] for svc in rest)):
        with ThreadPoolExecutor(max_workers=len(group)) as pool:
            list(pool.map(lambda svc: svc.jvm(s).stop(), group))


def cmd_status(args: argparse.Namespace) -> int:
    s = load_settings(args)
    lay = s.layout
    mode = read_mode(lay)
    if mode is None:
        print(f"not healthy: no cluster was started in {lay.data_dir}")
        return 1
    c = Client(lay, mode)
    ok = True
    for svc in services(lay, mode):
        jvm = svc.jvm(s)
        pid = jvm.running_pid()
        h = probe(c, svc)
        ok = ok and h.healthy
        owner = jvm.owner_text(pid) if pid is not None else "no JVM started by this tool"
        print(f"  {svc.name:<10} {'healthy' if h.healthy else 'NOT healthy'}: {h.detail} ({owner})")
    verdict = "healthy" if ok else "not healthy"
    print(f"{verdict}: Pulsar cluster {cc.CLUSTER_NAME} ({mode.text()}, data {lay.data_dir})")
    return 0 if ok else 1


def cmd_env(args: argparse.Namespace) -> int:
    s = load_settings(args)
    mode = read_mode(s.layout)
    if mode is None:
        fail(f"no cluster was started in {s.layout.data_dir}; run `{PROG} start` first")
    info = describe(s.layout, mode)
    print(json.dumps(info, indent=2) if args.json else exports(info))
    return 0


def describe(lay: Layout, mode: Mode) -> dict[str, object]:
    """Everything a client needs, as data (also what `env --json` prints)."""
    brokers = []
    for i, b in enumerate(lay.brokers):
        urls = b.urls()
        urls["service_url_external"] = b.urls("127.0.0.1")["service_url"]
        if not mode.tls:
            urls = {k: v for k, v in urls.items() if "tls" not in k}
        brokers.append({"name": f"broker-{i + 1}", **urls})
    proxy = lay.proxy.urls()
    if not mode.tls:
        proxy = {k: v for k, v in proxy.items() if "tls" not in k}
    tokens = {role: str(cc.token_path(lay, role)) for role in cc.ROLES} if mode.auth else {}
    return {
        "cluster": cc.CLUSTER_NAME,
        "pulsar_version": cc.PULSAR_VERSION,
        "auth": mode.auth,
        "tls": mode.tls,
        "data_dir": str(lay.data_dir),
        "service_url": lay.multi_host("pulsar", "binary"),
        "http_url": lay.multi_host("http", "http"),
        "brokers": brokers,
        "proxy": proxy,
        "listeners": {"internal": "localhost", "external": "127.0.0.1"},
        "zookeeper": f"localhost:{lay.zk_port}",
        "bookie": f"localhost:{lay.bookie_port}",
        "ca_cert": str(lay.tls_dir / "ca.cert.pem") if mode.tls else None,
        "roles": {
            "superuser": cc.ADMIN_ROLE,
            "proxy": cc.PROXY_ROLE,
            "app": cc.APP_ROLE,
            "limited": cc.LIMITED_ROLE,
        },
        "tokens": tokens,
        "app_tenant": cc.APP_TENANT,
        "app_namespaces": list(cc.APP_NAMESPACES),
        "namespace_bundles": cc.NAMESPACE_BUNDLES,
    }


def exports(info: dict[str, object]) -> str:
    """`export` lines: PULSAR_CLUSTER_* for clients and tests, KOP_PULSAR_* for kop."""
    env: dict[str, str] = {
        "PULSAR_CLUSTER_NAME": str(info["cluster"]),
        "PULSAR_CLUSTER_SERVICE_URL": str(info["service_url"]),
        "PULSAR_CLUSTER_HTTP_URL": str(info["http_url"]),
    }
    suffix = {
        "service_url": "URL",
        "http_url": "HTTP_URL",
        "service_url_tls": "TLS_URL",
        "http_url_tls": "HTTPS_URL",
        "service_url_external": "EXTERNAL_URL",
    }
    brokers = info["brokers"]
    assert isinstance(brokers, list)
    named = [(f"BROKER{i + 1}", b) for i, b in enumerate(brokers)] + [("PROXY", info["proxy"])]
    for prefix, urls in named:
        assert isinstance(urls, dict)
        for key, value in urls.items():
            if key in suffix:
                env[f"PULSAR_CLUSTER_{prefix}_{suffix[key]}"] = value
    if info["ca_cert"]:
        env["PULSAR_CLUSTER_CA_CERT"] = str(info["ca_cert"])
    tokens = info["tokens"]
    assert isinstance(tokens, dict)
    names = {cc.ADMIN_ROLE: "ADMIN", cc.PROXY_ROLE: "PROXY", cc.APP_ROLE: "APP",
             cc.LIMITED_ROLE: "LIMITED"}  # fmt: skip
    for role, path in tokens.items():
        env[f"PULSAR_CLUSTER_{names[role]}_TOKEN_FILE"] = path
    env.update(kop_settings(info))
    return "\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items())


def kop_settings(info: dict[str, object]) -> dict[str, str]:
    """kop's settings for this cluster as its users run kop: through the proxy (over
    TLS when on), as the application role (admin of its tenant, nothing more)."""
    proxy = info["proxy"]
    assert isinstance(proxy, dict)
    tls = bool(info["tls"])
    tenant_ns, system_ns = cc.APP_NAMESPACES
    tenant, namespace = tenant_ns.split("/")
    env = {
        "KOP_PULSAR_SERVICE_URL": proxy["service_url_tls" if tls else "service_url"],
        "KOP_PULSAR_HTTP_URL": proxy["http_url_tls" if tls else "http_url"],
        "KOP_TENANT": tenant,
        "KOP_NAMESPACE": namespace,
        "KOP_SYSTEM_NAMESPACE": system_ns,
    }
    if tls:
        env["KOP_PULSAR_TLS_TRUST_CERTS_FILE"] = str(info["ca_cert"])
    tokens = info["tokens"]
    if isinstance(tokens, dict) and tokens:
        env["KOP_PULSAR_AUTH_PLUGIN"] = "token"
        env["KOP_PULSAR_AUTH_PARAMS"] = f"file://{tokens[cc.APP_ROLE]}"
    return env


def _how_to_use(lay: Layout, mode: Mode) -> str:
    info = describe(lay, mode)
    first = info["brokers"]
    assert isinstance(first, list)
    lines = [
        f"Pulsar cluster {cc.CLUSTER_NAME} ({mode.text()}):",
        f"  brokers  {info['service_url']}  {info['http_url']}",
        f"  proxy    {lay.proxy.urls()['service_url']}  {lay.proxy.urls()['http_url']}",
    ]
    if mode.tls:
        p = lay.proxy.urls()
        lines.append(
            f"  TLS      proxy {p['service_url_tls']} {p['http_url_tls']}, CA {info['ca_cert']}"
        )
    if mode.auth:
        lines.append(
            f"  tokens   {lay.security_dir}/<role>.token for roles {', '.join(cc.ROLES)} "
            f"({cc.APP_ROLE}: admin of tenant {cc.APP_TENANT})"
        )
    lines += [
        f'Every URL and file as shell variables: eval "$(python3 {PROG} env)" (or env --json).',
        "Point kop at it (through the proxy, as the application role):",
        "  "
        + " ".join(f"{k}={shlex.quote(v)}" for k, v in kop_settings(info).items())
        + " .venv/bin/kop serve",
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Provision and run a Pulsar cluster (ZooKeeper, bookie, 2 brokers, "
        "proxy) for kop."
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--data-dir",
            help="data dir (env KOP_PULSAR_CLUSTER_DATA, default <cache>/pulsar-cluster-data)",
        )

    p_fetch = sub.add_parser("fetch", help="resolve the pinned Pulsar jars into the cache")
    p_fetch.set_defaults(func=cmd_fetch)

    p_start = sub.add_parser("start", help="start (or reuse) the cluster, wait until healthy")
    common(p_start)
    p_start.add_argument("--auth", action="store_true", help="token authentication + authorization")
    p_start.add_argument("--tls", action="store_true", help="TLS ports with a CA made at start")
    p_start.add_argument("--fresh", action="store_true", help="stop and wipe the data dir first")
    p_start.add_argument(
        "--timeout",
        type=float,
        help="seconds each service may take (env KOP_PULSAR_CLUSTER_START_TIMEOUT, default 180)",
    )
    p_start.set_defaults(func=cmd_start)

    p_stop = sub.add_parser("stop", help="stop the cluster this tool started")
    common(p_stop)
    p_stop.set_defaults(func=cmd_stop)

    p_status = sub.add_parser("status", help="whether every service is healthy (exit 0) or not")
    common(p_status)
    p_status.set_defaults(func=cmd_status)

    p_env = sub.add_parser("env", help="URLs, token files and the CA file, as exports or JSON")
    common(p_env)
    p_env.add_argument("--json", action="store_true", help="JSON instead of export lines")
    p_env.set_defaults(func=cmd_env)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return TOOL.guard(lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
