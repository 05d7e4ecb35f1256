"""What every connection of one client carries: its credentials, its TLS settings
and the listener it asks lookups for."""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from kop.pulsar.wire.auth import Authentication, NoAuth
from kop.pulsar.wire.tls import TlsOptions


@dataclass
class ConnectOptions:
    """`listener_name` is Pulsar's advertisedListeners name: lookups then answer with
    the address of that listener (clusters with internal and external addresses)."""

    auth: Authentication = field(default_factory=NoAuth)
    tls: TlsOptions = field(default_factory=TlsOptions)
    listener_name: str = ""
    _context: ssl.SSLContext | None = field(default=None, repr=False)

    def ssl_context(self) -> ssl.SSLContext:
        """Built once: loading a trust store per connection would be wasted work."""
        if self._context is None:
            self._context = self.tls.context()
        return self._context
