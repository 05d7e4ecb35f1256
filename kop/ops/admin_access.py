"""Who may see what of the admin HTTP (docs/security.md, "The admin HTTP API").

Only /healthz and /readyz are open to anyone (probes). Everything else (/metrics and
/v1/instances, which show every tenant; /v1/groups and /v1/topics) needs one of:

- `Authorization: Bearer <admin_token>`: everything;
- with authorization on, a bearer JWT as Kafka clients' tokens are checked: that
  role's view of /v1/groups and /v1/topics, and /metrics and /v1/instances only for
  a superuser (kop.ops.viewer says what the role may see);
- with authorization off and no admin_token: a loopback client (the TCP peer's
  address, never a header such as X-Forwarded-For).

The decision is `admin_access`, a pure function of the path, the peer's address and
the bearer; the JWT, when one decides, is checked by the caller.
"""

from __future__ import annotations

import enum
import hmac
import ipaddress
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
# What a role sees part of (its groups, its topics' partitions); the rest is all or nothing.
_ROLE_VIEWS = ("/v1/topics", "/v1/groups")


class Grant(enum.Enum):
    EVERYTHING = "everything"  # an open path, the admin token, or loopback without one
    ROLE_VIEW = "role view"  # the bearer JWT's role: what it may see of groups and topics
    SUPERUSER = "superuser"  # the bearer JWT's role, only if a superuser (every tenant's)
    DENIED = "denied"  # 401


@dataclass(frozen=True)
class Decision:
    grant: Grant
    reason: str = ""  # DENIED: the answer's one line


class AdminTokenError(ValueError):
    pass


def read_token(spec: str, setting: str = "admin_token") -> str:
    """A token: `spec` itself, or the content of `file:///path` (stripped); kop's
    admin_token and `kop groups --token` alike. "" when none is set."""
    if not spec.startswith("file:"):
        return spec
    path = Path(urllib.parse.unquote(urllib.parse.urlparse(spec).path))
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise AdminTokenError(f"{setting}: cannot read {path}: {exc.strerror}") from None
    if not token:
        raise AdminTokenError(f"{setting}: {path} is empty")
    return token


def bearer_of(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None for anything else."""
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def is_loopback(peer_ip: str | None) -> bool:
    """127.0.0.0/8 or ::1 (also as ::ffff:127.x.y.z); anything unparsable is not."""
    if not peer_ip:
        return False
    try:
        ip = ipaddress.ip_address(peer_ip)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def admin_access(
    path: str,
    peer_ip: str | None,
    bearer: str | None,
    *,
    admin_token: str,
    authorizing: bool,
) -> Decision:
    """What the asker of `path` may see: `peer_ip` is the TCP peer's address, `bearer`
    the Authorization header's bearer token (None: none), `admin_token` "" when none
    is configured, `authorizing` whether kop authorizes (bearer JWTs are checked)."""
    if path in OPEN_PATHS:
        return Decision(Grant.EVERYTHING)
    if bearer and admin_token and _same(bearer, admin_token):
        return Decision(Grant.EVERYTHING)
    if authorizing:
        if not bearer:
            return Decision(
                Grant.DENIED, "a token is needed: Authorization: Bearer <JWT or admin_token>"
            )
        role_view = any(path == p or path.startswith(p + "/") for p in _ROLE_VIEWS)
        return Decision(Grant.ROLE_VIEW if role_view else Grant.SUPERUSER)
    if admin_token:
        return Decision(
            Grant.DENIED, "the admin token is needed: Authorization: Bearer <admin_token>"
        )
    if is_loopback(peer_ip):
        return Decision(Grant.EVERYTHING)
    return Decision(
        Grant.DENIED,
        "only loopback clients may see this without a token: set admin_token "
        "(KOP_ADMIN_TOKEN) on kop and send Authorization: Bearer <admin_token>",
    )


def _same(given: str, expected: str) -> bool:
    """In constant time (of the expected token's length)."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), expected.encode("utf-8", "surrogateescape")
    )
