"""The shape of the cluster tools/pulsar_cluster.py runs: ports, directories, configs.

Each service's config is rendered from the few settings it needs, and nothing
else: the brokers run with **Pulsar's production defaults** (the broker.conf
Pulsar ships) except where one small machine forces a change, and every
override below says why. In particular topics are deleted when inactive,
auto-creation is Pulsar's default (non-partitioned), deduplication is off
broker-wide and the load manager moves bundles between the brokers: what a
platform team runs, which kop must cope with by itself (namespace policies,
lookups, redirects) without asking for broker settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import provision

PULSAR_VERSION = "4.0.7"  # the standalone's version; see tools/pulsar-cluster/pom.xml
PROXY_VERSION = "4.0.6"  # pulsar-proxy 4.0.7 is not on Maven Central here; see the pom
BOOKKEEPER_VERSION = "4.17.2"  # Pulsar 4.0.7's; checked in lib/ after a fetch
CLUSTER_NAME = "kop-cluster"

# Roles (token subjects). admin and proxy are superusers; kop-app is an admin of
# tenant kop only (what a platform team grants an application); kop-limited may
# only produce and consume on kop/default.
ADMIN_ROLE = "admin"
PROXY_ROLE = "proxy"
APP_ROLE = "kop-app"
LIMITED_ROLE = "kop-limited"
ROLES = (ADMIN_ROLE, PROXY_ROLE, APP_ROLE, LIMITED_ROLE)
APP_TENANT = "kop"
APP_NAMESPACES = ("kop/default", "kop/__kop")
# Namespaces are created with this many bundles so that a topic's partitions
# spread over both brokers (with one bundle, one broker owns the namespace).
# It is also Pulsar's default for public/default (PulsarClusterMetadataSetup -bn).
NAMESPACE_BUNDLES = 16

# Default ports: outside the standalone's (6650/8080/3181), the other standalones'
# (6661-6663/8091-8093) and the reference Kafka's (19092...). KOP_PULSAR_CLUSTER_PORT_OFFSET
# moves all of them at once, e.g. to run a second cluster.
ZK_PORT = 2191
BOOKIE_PORT = 3281


@dataclass(frozen=True)
class Endpoints:
    """A Pulsar service's four ports: binary and HTTP, plain and TLS."""

    binary: int
    http: int
    binary_tls: int
    http_tls: int

    def shifted(self, offset: int) -> Endpoints:
        return Endpoints(
            self.binary + offset, self.http + offset, self.binary_tls + offset,
            self.http_tls + offset,
        )  # fmt: skip

    def urls(self, host: str = "localhost") -> dict[str, str]:
        return {
            "service_url": f"pulsar://{host}:{self.binary}",
            "http_url": f"http://{host}:{self.http}",
            "service_url_tls": f"pulsar+ssl://{host}:{self.binary_tls}",
            "http_url_tls": f"https://{host}:{self.http_tls}",
        }


BROKER_PORTS = (Endpoints(6651, 8081, 6751, 8441), Endpoints(6652, 8082, 6752, 8442))
PROXY_PORTS = Endpoints(6660, 8090, 6760, 8490)

# Heap sizes for one small machine (2 cores): five JVMs, each well under its
# limit when idle. Direct memory backs netty buffers, the managed-ledger cache
# (1/5 of it by Pulsar's default) and the bookie's write/read caches (1/4 each).
_GC = [
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:+PerfDisableSharedMem",
    "-XX:+ExitOnOutOfMemoryError",
]
JVM_OPTS: dict[str, list[str]] = {
    "zookeeper": ["-Xms64m", "-Xmx256m", *_GC],
    "bookie": ["-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m", *_GC],
    "broker": ["-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m", *_GC],
    "proxy": ["-Xms128m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m", *_GC],
}


@dataclass(frozen=True)
class Mode:
    """What `start` was asked for; recorded in <data>/cluster.json."""

    auth: bool
    tls: bool

    def text(self) -> str:
        parts = [p for p, on in (("--auth", self.auth), ("--tls", self.tls)) if on]
        return " ".join(parts) or "no auth, no TLS"


@dataclass(frozen=True)
class Layout:
    """Where everything lives and which ports it uses, for one data dir and port offset."""

    data_dir: Path
    offset: int

    @property
    def zk_port(self) -> int:
        return ZK_PORT + self.offset

    @property
    def bookie_port(self) -> int:
        return BOOKIE_PORT + self.offset

    @property
    def brokers(self) -> tuple[Endpoints, ...]:
        return tuple(b.shifted(self.offset) for b in BROKER_PORTS)

    @property
    def proxy(self) -> Endpoints:
        return PROXY_PORTS.shifted(self.offset)

    @property
    def metadata_url(self) -> str:
        return f"zk:localhost:{self.zk_port}"

    @property
    def security_dir(self) -> Path:
        return self.data_dir / "security"

    @property
    def tls_dir(self) -> Path:
        return self.security_dir / "tls"

    @property
    def state_file(self) -> Path:
        return self.data_dir / "cluster.json"

    def service_dir(self, name: str) -> Path:
        return self.data_dir / name

    def conf(self, name: str) -> Path:
        return self.service_dir(name) / f"{name}.conf"

    def multi_host(self, scheme: str, attr: str) -> str:
        """pulsar://localhost:6651,localhost:6652: every broker, as Pulsar URLs list them."""
        hosts = ",".join(f"localhost:{getattr(b, attr)}" for b in self.brokers)
        return f"{scheme}://{hosts}"

    def all_ports(self) -> dict[str, int]:
        ports = {"zookeeper": self.zk_port, "bookie": self.bookie_port}
        named = [(f"broker-{i + 1}", b) for i, b in enumerate(self.brokers)] + [
            ("proxy", self.proxy)
        ]
        for name, e in named:
            for attr in ("binary", "http", "binary_tls", "http_tls"):
                ports[f"{name} {attr.replace('_', ' ')}"] = getattr(e, attr)
        return ports


def load_offset() -> int:
    raw = os.environ.get("KOP_PULSAR_CLUSTER_PORT_OFFSET", "").strip() or "0"
    try:
        offset = int(raw)
    except ValueError:
        provision.fail(f"KOP_PULSAR_CLUSTER_PORT_OFFSET={raw!r} is not a number; set e.g. 100")
    if not 0 <= offset <= 50000:
        provision.fail(f"KOP_PULSAR_CLUSTER_PORT_OFFSET={offset} is out of range; set 0..50000")
    return offset


# --------------------------------------------------------------------------- configs


def render(settings: Mapping[str, object], header: str) -> str:
    lines = [f"# Generated by tools/pulsar_cluster.py: {header}", ""]
    for key, value in settings.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        lines.append(f"{key}={text}")
    return "\n".join(lines) + "\n"


def zookeeper_conf(lay: Layout) -> dict[str, object]:
    return {
        "tickTime": 2000,
        "initLimit": 10,
        "syncLimit": 5,
        "dataDir": lay.service_dir("zookeeper") / "data",
        "clientPort": lay.zk_port,
        "clientPortAddress": "127.0.0.1",
        # ZooKeeper's AdminServer binds 8080 by default: the standalone's HTTP port.
        "admin.enableServer": False,
        # ruok: liveness; dump: the ephemeral nodes, which shows the bookie registered.
        "4lw.commands.whitelist": "ruok,srvr,dump",
        "autopurge.snapRetainCount": 3,
        "autopurge.purgeInterval": 1,
    }


def bookie_conf(lay: Layout) -> dict[str, object]:
    d = lay.service_dir("bookie")
    return {
        "bookiePort": lay.bookie_port,
        "advertisedAddress": "localhost",  # bookie id localhost:<port>, stable across restarts
        "allowLoopback": True,  # a bookie on 127.0.0.1 is refused otherwise
        "journalDirectories": d / "journal",
        "ledgerDirectories": d / "ledgers",
        # Pulsar's metadata driver, ledgers under /ledgers where PulsarClusterMetadataSetup
        # formatted them. No "/ledgers" suffix: it would become a ZooKeeper chroot.
        "metadataServiceUri": f"metadata-store:{lay.metadata_url}",
        # As Pulsar's bookkeeper.conf: DbLedgerStorage (BookKeeper's own default is
        # SortedLedgerStorage); its caches default to 1/4 of direct memory each.
        "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
        "httpServerEnabled": False,  # its port would be 8000 by default; nothing needs it
        # As Pulsar's bookkeeper.conf: an entry as large as the broker's maxMessageSize
        # (5 MiB) plus framing; BookKeeper's own default would refuse a full-size chunk.
        "nettyMaxFrameSizeBytes": 5253120,
    }


def broker_conf(lay: Layout, index: int, mode: Mode) -> dict[str, object]:
    e = lay.brokers[index]
    conf: dict[str, object] = {
        "clusterName": CLUSTER_NAME,
        "metadataStoreUrl": lay.metadata_url,
        "configurationMetadataStoreUrl": lay.metadata_url,
        "brokerServicePort": e.binary,
        "webServicePort": e.http,
        # Broker id localhost:<http port>: both brokers on one host, told apart by port.
        "advertisedAddress": "localhost",
        # Two listeners on the same ports, told apart by host name: a client that
        # sends listenerName=external in its lookups is sent to 127.0.0.1, the others
        # (and broker-to-broker, proxy-to-broker) to localhost.
        "advertisedListeners": _listeners(e, mode.tls),
        "internalListenerName": "internal",
        # One bookie: Pulsar's default ensemble/quorums of 2 could not write.
        "managedLedgerDefaultEnsembleSize": 1,
        "managedLedgerDefaultWriteQuorum": 1,
        "managedLedgerDefaultAckQuorum": 1,
        # Pulsar's defaults, spelt out because kop must not rely on anything else.
        "functionsWorkerEnabled": False,
        "webSocketServiceEnabled": False,
    }
    if mode.auth:
        conf.update(_auth_conf(lay))
        conf.update(
            {
                "authorizationEnabled": True,
                "superUserRoles": f"{ADMIN_ROLE},{PROXY_ROLE}",
                # The proxy connects as `proxy` and forwards the client's role; the
                # broker authorizes that original role.
                "proxyRoles": PROXY_ROLE,
                # Broker-to-broker (lookups, namespace ops forwarded to the owner): superuser.
                "brokerClientAuthenticationPlugin": TOKEN_CLIENT_PLUGIN,
                "brokerClientAuthenticationParameters": f"file://{token_path(lay, ADMIN_ROLE)}",
            }
        )
    if mode.tls:
        conf.update(_tls_conf(lay))
        conf.update({"brokerServicePortTls": e.binary_tls, "webServicePortTls": e.http_tls})
    return conf


def proxy_conf(lay: Layout, mode: Mode) -> dict[str, object]:
    e = lay.proxy
    conf: dict[str, object] = {
        "clusterName": CLUSTER_NAME,
        # Brokers are discovered in the metadata store, as a production proxy does.
        "metadataStoreUrl": lay.metadata_url,
        "configurationMetadataStoreUrl": lay.metadata_url,
        "servicePort": e.binary,
        "webServicePort": e.http,
        "advertisedAddress": "localhost",
        # The proxy only connects to broker ports it allows, by default 6650 and 6651
        # (one broker per host). Ours share a host, so each has ports of its own.
        "brokerProxyAllowedTargetPorts": ",".join(
            str(p) for b in lay.brokers for p in (b.binary, b.binary_tls)
        ),
    }
    if mode.auth:
        conf.update(_auth_conf(lay))
        conf.update(
            {
                # The brokers authorize (the proxy forwards the client's role to them).
                "authorizationEnabled": False,
                "forwardAuthorizationCredentials": True,
                "superUserRoles": f"{ADMIN_ROLE},{PROXY_ROLE}",
                "brokerClientAuthenticationPlugin": TOKEN_CLIENT_PLUGIN,
                "brokerClientAuthenticationParameters": f"file://{token_path(lay, PROXY_ROLE)}",
            }
        )
    if mode.tls:
        conf.update(_tls_conf(lay))
        # Clients reach the proxy over TLS; the proxy reaches brokers in plaintext
        # (one host, and the brokers' plaintext ports stay open anyway).
        conf.update(
            {
                "servicePortTls": e.binary_tls,
                "webServicePortTls": e.http_tls,
                "tlsEnabledWithBroker": False,
            }
        )
    return conf


TOKEN_CLIENT_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"


def token_path(lay: Layout, role: str) -> Path:
    return lay.security_dir / f"{role}.token"


def _listeners(e: Endpoints, tls: bool) -> str:
    out = []
    for name, host in (("internal", "localhost"), ("external", "127.0.0.1")):
        out.append(f"{name}:pulsar://{host}:{e.binary}")
        if tls:
            out.append(f"{name}:pulsar+ssl://{host}:{e.binary_tls}")
    return ",".join(out)


def _auth_conf(lay: Layout) -> dict[str, object]:
    return {
        "authenticationEnabled": True,
        "authenticationProviders": TOKEN_PROVIDER,
        "tokenSecretKey": f"file://{lay.security_dir / 'token-secret.key'}",
    }


def _tls_conf(lay: Layout) -> dict[str, object]:
    return {
        "tlsCertificateFilePath": lay.tls_dir / "server.cert.pem",
        "tlsKeyFilePath": lay.tls_dir / "server.key.pem",
        "tlsTrustCertsFilePath": lay.tls_dir / "ca.cert.pem",
        # Clients authenticate with tokens, not certificates.
        "tlsRequireTrustedClientCertOnConnect": False,
    }
