"""TLS for kop's SSL and SASL_SSL listeners: PEM files, reloaded on change or SIGHUP.

A reload builds a whole new context and swaps it in through the SNI callback, which
OpenSSL calls on every ClientHello (with or without a server name): new handshakes
get the new certificate, established connections keep theirs and never notice. A
reload that fails (a key that does not match, a half-written file) keeps the
context that works and says why.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

ClientAuth = Literal["none", "requested", "required"]
_VERIFY = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


class TlsSetupError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert_file: Path
    key_file: Path
    ca_file: Path | None = None
    client_auth: ClientAuth = "none"

    def stamp(self) -> tuple[float, ...]:
        """What changes when any file is replaced (mtimes; -1 for a missing file)."""
        paths = [self.cert_file, self.key_file, *([self.ca_file] if self.ca_file else [])]
        return tuple(p.stat().st_mtime if p.exists() else -1.0 for p in paths)


def build_context(files: TlsFiles) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(str(files.cert_file), str(files.key_file))
        if files.ca_file is not None:
            ctx.load_verify_locations(cafile=str(files.ca_file))
    except (OSError, ssl.SSLError) as exc:
        raise TlsSetupError(f"TLS certificate or key cannot be used: {exc}") from None
    if files.client_auth != "none" and files.ca_file is None:
        raise TlsSetupError(f"ssl_client_auth={files.client_auth} needs ssl_ca_file")
    ctx.verify_mode = _VERIFY[files.client_auth]
    return ctx


class ServerTls:
    """The context listeners are given (`context`), and the one handshakes get."""

    def __init__(self, files: TlsFiles) -> None:
        self._files = files
        self._current = build_context(files)
        self._stamp = files.stamp()
        self.context = build_context(files)
        self.context.sni_callback = self._choose
        self.reloads = 0

    def _choose(self, sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        sock.context = self._current

    def reload(self, force: bool = False) -> bool:
        """True if a new context is in use from now on."""
        stamp = self._files.stamp()
        if not force and stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            fresh = build_context(self._files)
        except TlsSetupError as exc:
            log.error("TLS files changed but cannot be used; keeping the previous ones: %s", exc)
            return False
        self._current = fresh
        self.reloads += 1
        log.info("TLS certificate and key reloaded from %s", self._files.cert_file)
        return True

    async def watch(self, interval_s: float) -> None:
        """Reload when the files change, checked every `interval_s`."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                self.reload()
            except OSError as exc:
                log.warning("cannot check TLS files: %s", exc)
