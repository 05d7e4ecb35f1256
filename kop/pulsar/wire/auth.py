"""Credentials kop presents to Pulsar, as Pulsar's own clients take them
(`authPlugin` + `authParams`): in CONNECT, in AUTH_RESPONSE when the broker asks
again (its token refresh), and as the admin REST's Authorization header.

Every call returns what is valid now: a token file is re-read when it changes, an
OAuth2 token is fetched again before it expires.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

import aiohttp

log = logging.getLogger(__name__)

PLUGINS = ("none", "token", "tls", "oauth2")


class AuthConfigError(ValueError):
    """Auth settings that cannot work; the message names the setting, never a secret."""


class AuthUnavailable(Exception):
    """Credentials cannot be had now (the OAuth2 issuer is down): retriable."""


class Authentication(Protocol):
    """`method` is CONNECT's auth_method_name ("" sends none)."""

    @property
    def method(self) -> str: ...

    async def command_data(self) -> bytes: ...

    async def http_headers(self) -> dict[str, str]: ...

    async def close(self) -> None: ...


class NoAuth:
    method = ""

    async def command_data(self) -> bytes:
        return b""

    async def http_headers(self) -> dict[str, str]:
        return {}

    async def close(self) -> None:
        return None


class TlsAuth(NoAuth):
    """The client certificate is the credential (in the TLS handshake); CONNECT only
    names the method, as the Java client's AuthenticationTls does."""

    method = "tls"


def _file_path(source: str) -> Path | None:
    if source.startswith("file:"):
        return Path(unquote(urlsplit(source).path))
    return None


class TokenAuth:
    """`token:<jwt>`, `file:///path` (re-read whenever it changes: operators rotate
    tokens by replacing the file), or the token itself."""

    method = "token"

    def __init__(self, source: str) -> None:
        self._path = _file_path(source)
        self._token = source.removeprefix("token:") if self._path is None else ""
        self._stamp: tuple[int, int] | None = None
        if self._path is not None:
            self._read()  # at start: a missing file is a config error, not a retry
        if not self._token:
            raise AuthConfigError("pulsar_auth_params: the token is empty")

    def _read(self) -> None:
        assert self._path is not None
        try:
            stat = self._path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            if stamp != self._stamp:
                token = self._path.read_text().strip()
                if token:
                    self._token, self._stamp = token, stamp
        except OSError as exc:
            if not self._token:
                raise AuthConfigError(f"pulsar_auth_params: token file: {exc}") from None
            log.warning("token file %s: %s; using the token read before", self._path, exc)

    def token(self) -> str:
        if self._path is not None:
            self._read()
        return self._token

    async def command_data(self) -> bytes:
        return self.token().encode()

    async def http_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token()}"}

    async def close(self) -> None:
        return None


@dataclass(frozen=True)
class OAuth2Params:
    """Pulsar's AuthenticationOAuth2 params (client-credentials flow)."""

    issuer_url: str
    private_key: Path  # the credentials file: client_id, client_secret
    audience: str | None = None
    scope: str | None = None

    @classmethod
    def parse(cls, params: str) -> OAuth2Params:
        try:
            raw = json.loads(params)
        except json.JSONDecodeError as exc:
            raise AuthConfigError(f"pulsar_auth_params for oauth2: not JSON ({exc.msg})") from None
        if not isinstance(raw, dict) or not raw.get("issuerUrl") or not raw.get("privateKey"):
            raise AuthConfigError("pulsar_auth_params for oauth2: want issuerUrl and privateKey")
        kind = raw.get("type", "client_credentials")
        if kind != "client_credentials":
            raise AuthConfigError(f"pulsar_auth_params for oauth2: type {kind!r} unsupported")
        key = _file_path(str(raw["privateKey"])) or Path(str(raw["privateKey"]))
        return cls(str(raw["issuerUrl"]), key, raw.get("audience"), raw.get("scope"))


class OAuth2Auth:
    """Fetches an access token from the issuer's token endpoint (found through its
    OpenID discovery document) and presents it as a token; fetched again when less
    than a tenth of its lifetime is left."""

    method = "token"

    def __init__(self, params: OAuth2Params, timeout_s: float = 30.0) -> None:
        self._params = params
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._credentials = self._load_credentials()
        self._token = ""
        self._renew_at = 0.0
        self._lock = asyncio.Lock()
        self._session: aiohttp.ClientSession | None = None

    def _load_credentials(self) -> dict[str, str]:
        try:
            raw = json.loads(self._params.private_key.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise AuthConfigError(
                f"oauth2 credentials file {self._params.private_key}: {exc}"
            ) from None
        if not isinstance(raw, dict) or not raw.get("client_id") or not raw.get("client_secret"):
            raise AuthConfigError(
                f"oauth2 credentials file {self._params.private_key}: "
                "want client_id and client_secret"
            )
        return {"client_id": str(raw["client_id"]), "client_secret": str(raw["client_secret"])}

    async def token(self) -> str:
        async with self._lock:
            if not self._token or time.monotonic() >= self._renew_at:
                await self._fetch()
            return self._token

    async def _fetch(self) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        issuer = self._params.issuer_url.rstrip("/")
        try:
            discovery = await self._get_json(f"{issuer}/.well-known/openid-configuration")
            form = {"grant_type": "client_credentials", **self._credentials}
            if self._params.audience:
                form["audience"] = self._params.audience
            if self._params.scope:
                form["scope"] = self._params.scope
            async with self._session.post(str(discovery["token_endpoint"]), data=form) as resp:
                answer: dict[str, Any] = await resp.json(content_type=None)
                if resp.status >= 300 or "access_token" not in answer:
                    error = answer.get("error_description") or answer.get("error") or resp.status
                    raise AuthUnavailable(f"oauth2 issuer {issuer} refused: {error}")
        except (aiohttp.ClientError, TimeoutError, KeyError, ValueError) as exc:
            raise AuthUnavailable(f"oauth2 issuer {issuer}: {exc}") from exc
        lifetime = float(answer.get("expires_in", 3600))
        self._token = str(answer["access_token"])
        self._renew_at = time.monotonic() + lifetime * 0.9

    async def _get_json(self, url: str) -> dict[str, Any]:
        assert self._session is not None
        async with self._session.get(url) as resp:
            if resp.status >= 300:
                raise AuthUnavailable(f"{url}: HTTP {resp.status}")
            found: dict[str, Any] = await resp.json(content_type=None)
            return found

    async def command_data(self) -> bytes:
        return (await self.token()).encode()

    async def http_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {await self.token()}"}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def make_authentication(plugin: str, params: str) -> Authentication:
    """The plugin for `pulsar_auth_plugin` / `pulsar_auth_params`; AuthConfigError
    says what is wrong at start, so a typo is not a 60-second wait."""
    if plugin == "none":
        return NoAuth()
    if plugin == "tls":
        return TlsAuth()
    if plugin == "token":
        if not params:
            raise AuthConfigError("pulsar_auth_plugin=token needs pulsar_auth_params")
        return TokenAuth(params)
    if plugin == "oauth2":
        return OAuth2Auth(OAuth2Params.parse(params))
    raise AuthConfigError(f"pulsar_auth_plugin {plugin!r}: want one of {', '.join(PLUGINS)}")
