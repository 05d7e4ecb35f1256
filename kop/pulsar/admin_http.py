"""The Pulsar admin REST's transport: several hosts tried in turn, the client's
credentials and TLS trust on every call, and the brokers' redirects followed with
them (aiohttp would drop the Authorization header on the way)."""

from __future__ import annotations

import json
import re
from ssl import SSLContext
from typing import Any

import aiohttp
from yarl import URL

from kop.pulsar.wire.options import ConnectOptions
from kop.pulsar.wire.service_url import ServiceUrl
from kop.storage.types import AdminError, StorageUnavailable

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# A proxy whose broker died (502), a broker still loading the bundle (503), a
# gateway timeout (504): no answer yet, not a refusal. Another host may answer;
# if none does, callers get a retriable StorageUnavailable, never a final error.
_NOT_YET = frozenset({502, 503, 504})
_MAX_REDIRECTS = 10


class AdminHttp:
    def __init__(self, http_url: str, timeout_s: float, options: ConnectOptions) -> None:
        self._service = ServiceUrl.parse(http_url.rstrip("/"), schemes=("http", "https"))
        self._options = options
        self._base = str(self._service) + "/admin/v2"  # for messages
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self, method: str, path: str, body: Any = None, ok_missing: bool = False,
        content_type: str = "application/json",
    ) -> Any:  # fmt: skip
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        data = None if body is None else json.dumps(body)
        headers = await self._options.auth.http_headers()
        if body is not None:
            headers["Content-Type"] = content_type
        ssl = self._options.ssl_context() if self._service.tls else None
        last: Exception | None = None
        for _ in self._service.hosts:
            base = self._service.next_url() + "/admin/v2"
            try:
                return await self._send(method, f"{base}/{path}", data, headers, ssl, ok_missing)
            except aiohttp.ClientSSLError as exc:
                raise StorageUnavailable(f"Pulsar admin at {self._base}: TLS: {exc}") from exc
            except (aiohttp.ClientConnectionError, TimeoutError) as exc:
                last = exc
            except AdminError as exc:
                if exc.status not in _NOT_YET:
                    raise
                last = exc
        raise StorageUnavailable(f"Pulsar admin at {self._base} unreachable: {last}") from last

    async def _send(
        self,
        method: str,
        url: str,
        data: str | None,
        headers: dict[str, str],
        ssl: SSLContext | None,
        ok_missing: bool,
    ) -> Any:
        """Follows the brokers' redirects (a topic's admin call goes to its owner)
        itself: aiohttp would drop the Authorization header on the way."""
        assert self._session is not None
        for _ in range(_MAX_REDIRECTS):
            async with self._session.request(
                method,
                url,
                data=data,
                headers=headers,
                ssl=ssl if ssl is not None else True,
                allow_redirects=False,
            ) as resp:
                if resp.status in _REDIRECTS and "Location" in resp.headers:
                    url = str(resp.url.join(URL(resp.headers["Location"])))
                    continue
                text = await resp.text()
                if resp.status == 404 and ok_missing:
                    return None
                if resp.status >= 300:
                    raise AdminError(resp.status, _reason(text))
                if not text:
                    return None
                try:
                    return json.loads(text)
                except json.JSONDecodeError:
                    return text
        raise AdminError(508, f"{method} {url}: more than {_MAX_REDIRECTS} redirects")


def _reason(text: str) -> str:
    if text.lstrip().startswith("<"):  # Jetty's HTML error page: its title says it
        found = re.search(r"<title>(.*?)</title>", text, re.S)
        return found.group(1).strip() if found else text[:100]
    try:
        return str(json.loads(text).get("reason", text))
    except (json.JSONDecodeError, AttributeError):
        return text[:300]
