"""Token and TLS material for tools/pulsar_cluster.py, made on this machine at start.

Stdlib plus the `openssl` command line (present on Debian/Ubuntu), because the
cluster tool runs before any virtualenv exists. What a production cluster gets
from its platform team (a signing key, role tokens, a CA and server
certificates) is generated once into the data dir and reused on every later
start, so tokens and the CA file a client holds stay valid across restarts.

Tokens are HS256 JWTs with only a ``sub`` claim (the role), as Pulsar's own
``pulsar tokens create --secret-key`` makes them; the broker reads the secret
with ``tokenSecretKey=file:///...`` as raw bytes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from provision import fail

SECRET_BYTES = 32  # HS256 wants a key of at least 256 bits (jjwt refuses shorter ones)
CERT_DAYS = 3650  # a local test cluster: the certificates should not expire under it
RSA_BITS = 2048


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def hs256_token(secret: bytes, subject: str) -> str:
    """A JWT Pulsar's AuthenticationProviderToken accepts: header.payload.signature."""
    header = _b64url(json.dumps({"alg": "HS256"}, separators=(",", ":")).encode())
    payload = _b64url(json.dumps({"sub": subject}, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode("ascii")
    signature = hmac.new(secret, signing_input, hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64url(signature)}"


@dataclass(frozen=True)
class Tokens:
    """The signing key and one token file per role, under <data>/security."""

    dir: Path

    @property
    def secret_key(self) -> Path:
        return self.dir / "token-secret.key"

    def token_file(self, role: str) -> Path:
        return self.dir / f"{role}.token"

    def ensure(self, roles: tuple[str, ...]) -> None:
        """Make the key once; (re)write a token for every role (cheap, and always valid)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.secret_key.is_file() or self.secret_key.stat().st_size < SECRET_BYTES:
            _write_private(self.secret_key, secrets.token_bytes(SECRET_BYTES))
        secret = self.secret_key.read_bytes()
        for role in roles:
            _write_private(self.token_file(role), hs256_token(secret, role).encode("ascii"))


@dataclass(frozen=True)
class Certificates:
    """A CA and one server certificate (SANs localhost and 127.0.0.1) for every broker
    and the proxy: they all run on this host, so one certificate names them all."""

    dir: Path

    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.cert.pem"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key.pem"

    @property
    def server_cert(self) -> Path:
        return self.dir / "server.cert.pem"

    @property
    def server_key(self) -> Path:
        # PKCS#8 ("BEGIN PRIVATE KEY"): Pulsar's netty TLS setup does not read PKCS#1 keys.
        return self.dir / "server.key.pem"

    def ensure(self) -> bool:
        """Make the CA and the server certificate unless both exist; True if made now."""
        if all(p.is_file() for p in (self.ca_cert, self.server_cert, self.server_key)):
            return False
        openssl = shutil.which("openssl")
        if not openssl:
            fail(
                "`openssl` is not on PATH; --tls needs it to make a CA and server certificates "
                "(`apt-get install -y openssl`)"
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        csr = self.dir / "server.csr"
        ext = self.dir / "server.ext"
        ext.write_text(
            "basicConstraints=CA:FALSE\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\n"
            "extendedKeyUsage=serverAuth,clientAuth\n"
            "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
        )
        days = str(CERT_DAYS)
        rsa = f"rsa:{RSA_BITS}"
        _openssl(openssl, "req", "-x509", "-newkey", rsa, "-nodes", "-sha256", "-days", days,
                 "-subj", "/CN=kop-cluster local CA", "-keyout", str(self.ca_key),
                 "-out", str(self.ca_cert),
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
        _openssl(openssl, "req", "-newkey", rsa, "-nodes", "-sha256", "-subj", "/CN=localhost",
                 "-keyout", str(self.server_key), "-out", str(csr))  # fmt: skip
        _openssl(openssl, "x509", "-req", "-sha256", "-days", days, "-in", str(csr),
                 "-CA", str(self.ca_cert), "-CAkey", str(self.ca_key),
                 "-set_serial", str(secrets.randbits(63)), "-extfile", str(ext),
                 "-out", str(self.server_cert))  # fmt: skip
        csr.unlink(missing_ok=True)
        ext.unlink(missing_ok=True)
        for key in (self.ca_key, self.server_key):
            os.chmod(key, 0o600)
        return True


def _openssl(openssl: str, *args: str) -> None:
    proc = subprocess.run(
        [openssl, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
    )
    if proc.returncode != 0:
        fail(f"`openssl {args[0]}` failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")


def _write_private(path: Path, data: bytes) -> None:
    """Write a key or token readable by its owner only."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    tmp.replace(path)
