"""Before kop serves: is the Pulsar cluster reachable, does it take kop's
credentials and TLS, may kop's role do what kop needs? Each answer that is no
becomes one line saying what is wrong and what breaks, instead of a wait that
ends in a guess. Only what a tenant admin may do is asked: no broker-wide
setting, no superuser call."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from kop.pulsar.admin import PulsarAdmin
from kop.pulsar.wire import PulsarWireError, WireClient, pb
from kop.pulsar.wire.errors import TlsError
from kop.storage.naming import Namespace
from kop.storage.types import AdminError, StorageUnavailable

log = logging.getLogger(__name__)
R = TypeVar("R")

# Statuses of an admin call worth waiting out: a broker starting or shedding load.
_TRANSIENT = frozenset({500, 502, 503, 504})


class PreflightError(Exception):
    """kop cannot serve on this cluster; the message is one line per problem."""


class _Transient(Exception):
    pass


@dataclass
class Preflight:
    """`serving` is where Kafka topics go by default, `system` kop's own topics."""

    admin: PulsarAdmin
    client: WireClient
    http_url: str
    service_url: str
    serving: Namespace
    system: Namespace
    wait_s: float = 60.0
    compaction_bytes: int = 1 << 20

    async def run(self) -> int:
        """Prepares the namespaces and returns the broker's largest message size."""
        deadline = time.monotonic() + self.wait_s
        await self._until(deadline, self._admin_reachable)
        await self._until(deadline, self._namespaces)
        size = await self._until(deadline, self._brokers)
        self.admin.learn_message_size(size)
        return size

    async def _until(self, deadline: float, step: Callable[[], Awaitable[R]]) -> R:
        """Repeats `step` while the cluster looks unready, until the deadline."""
        while True:
            try:
                return await step()
            except _Transient as exc:
                if time.monotonic() >= deadline:
                    raise PreflightError(
                        f"{exc} (still after {self.wait_s:.0f}s): start Pulsar "
                        "(`make pulsar-start`) or point KOP_PULSAR_HTTP_URL / "
                        "KOP_PULSAR_SERVICE_URL at a running cluster"
                    ) from None
                log.info("waiting for Pulsar: %s", exc)
                await asyncio.sleep(1.0)

    async def _admin_reachable(self) -> None:
        for tenant in sorted({self.serving.tenant, self.system.tenant}):
            await self._admin_call(
                self.admin.namespaces_of(tenant),
                f"list the namespaces of tenant {tenant!r}",
                "it needs to be an admin of that tenant "
                f"(pulsar-admin tenants update {tenant} --admin-roles <kop's role>)",
            )

    async def _namespaces(self) -> None:
        for ns, label in ((self.serving, "Kafka topics"), (self.system, "kop's own topics")):
            await self._admin_call(
                self.admin.ensure_namespace(ns),
                f"find or create namespace {ns.path} (for {label})",
                f"create it (pulsar-admin namespaces create {ns.path}) or make kop's role "
                f"an admin of tenant {ns.tenant}",
            )
            await self._admin_call(
                self.admin.serve_namespace(ns),
                f"set namespace policies deduplication=true and inactive topics never "
                f"deleted on {ns.path}",
                "without deduplication an entry re-sent after a reconnect is stored twice "
                "and every later offset shifts; without the inactive-topic policy Pulsar "
                "deletes idle Kafka topics. Make kop's role an admin of tenant "
                f"{ns.tenant}, or set both policies for it",
            )
        await self._admin_call(
            self.admin.configure_system_namespace(self.system, self.compaction_bytes),
            f"set infinite retention and a compaction threshold on {self.system.path}",
            "kop's offsets and index topics would lose data to retention. Make kop's "
            f"role an admin of tenant {self.system.tenant}, or set these policies for it",
        )

    async def _admin_call(self, call: Awaitable[R], what: str, fix: str) -> R:
        try:
            return await call
        except StorageUnavailable as exc:
            if "TLS:" in str(exc):
                raise PreflightError(
                    f"{exc}: check pulsar_tls_trust_certs_file and pulsar_tls_hostname_verification"
                ) from None
            raise _Transient(str(exc)) from None
        except AdminError as exc:
            if exc.status == 401 and not _is_authorization(exc):
                raise PreflightError(
                    f"the Pulsar admin at {self.http_url} refused kop's credentials (401): "
                    "check pulsar_auth_plugin and pulsar_auth_params"
                ) from None
            if exc.status in (401, 403):
                raise PreflightError(
                    f"kop's role may not {what} ({exc.status} from the Pulsar admin: "
                    f"{exc.reason}): {fix}"
                ) from None
            if exc.status in _TRANSIENT:
                raise _Transient(f"the Pulsar admin at {self.http_url} answers {exc}") from None
            raise PreflightError(f"kop could not {what}: {exc}") from None

    async def _brokers(self) -> int:
        size = 0
        for ns in (self.serving, self.system):
            topic = f"persistent://{ns.path}/__kop_preflight"
            try:
                size = await self.client.probe(topic)
            except TlsError as exc:
                raise PreflightError(
                    f"{exc}: check pulsar_tls_trust_certs_file and pulsar_tls_hostname_verification"
                ) from None
            except PulsarWireError as exc:
                raise self._wire_problem(exc, ns) from None
        return size

    def _wire_problem(self, exc: PulsarWireError, ns: Namespace) -> Exception:
        code = exc.server_error
        if code == pb.AuthenticationError:
            return PreflightError(
                f"Pulsar at {self.service_url} refused kop's credentials: {exc.message}: "
                "check pulsar_auth_plugin and pulsar_auth_params"
            )
        if code == pb.AuthorizationError:
            return PreflightError(
                f"kop's role may not look up topics in {ns.path}: {exc.message}: it needs "
                f"produce and consume there (pulsar-admin namespaces grant-permission "
                f"{ns.path} --role <kop's role> --actions produce,consume) or tenant admin"
            )
        if "listener" in exc.message:
            return PreflightError(f"{exc.message}: check pulsar_listener_name")
        if exc.retriable:
            return _Transient(f"Pulsar at {self.service_url}: {exc.message}")
        return PreflightError(f"Pulsar at {self.service_url}: {exc.message}")


def _is_authorization(exc: AdminError) -> bool:
    """Pulsar answers 401 both for credentials it refuses ("Authentication required")
    and for many operations a known role may not do ("Unauthorized to
    validateTenantOperation ..."): only the reason tells them apart."""
    reason = exc.reason.lower()
    return reason.startswith("unauthorized to") or "permission" in reason
