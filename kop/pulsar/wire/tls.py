"""TLS towards Pulsar (`pulsar+ssl://`, `https://`), with the options Pulsar's own
clients have: a trust store, hostname verification, a client certificate."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path


class TlsConfigError(ValueError):
    """TLS options that cannot make a context (a missing or unreadable file)."""


@dataclass(frozen=True)
class TlsOptions:
    """`trust_certs_file` None trusts the system's CAs; `allow_insecure` trusts any
    certificate (Pulsar's tlsAllowInsecureConnection), for tests only."""

    trust_certs_file: Path | None = None
    hostname_verification: bool = True
    cert_file: Path | None = None
    key_file: Path | None = None
    allow_insecure: bool = False

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        try:
            if self.trust_certs_file is not None:
                ctx.load_verify_locations(cafile=str(self.trust_certs_file))
            if self.cert_file is not None:
                key = str(self.key_file) if self.key_file is not None else None
                ctx.load_cert_chain(str(self.cert_file), key)
        except (OSError, ssl.SSLError) as exc:
            raise TlsConfigError(f"TLS files: {exc}") from exc
        if self.allow_insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif not self.hostname_verification:
            ctx.check_hostname = False
        return ctx
