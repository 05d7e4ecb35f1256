"""Security material the tests make themselves: a CA, a server certificate for
localhost, client certificates, and JWTs signed as Pulsar's token tools sign them."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import time
from dataclasses import dataclass
from pathlib import Path

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass(frozen=True)
class Ca:
    dir: Path
    key: rsa.RSAPrivateKey
    cert: x509.Certificate

    @property
    def cert_file(self) -> Path:
        return self.dir / "ca.cert.pem"

    @classmethod
    def make(cls, directory: Path, cn: str = "kop test CA") -> Ca:
        directory.mkdir(parents=True, exist_ok=True)
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(_name(cn))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + 30 * _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        ca = cls(directory, key, cert)
        ca.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return ca

    def issue(self, name: str, cn: str, server: bool) -> tuple[Path, Path]:
        """(cert file, key file) for `cn`; a server certificate names localhost."""
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + 30 * _DAY)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        cert = builder.sign(self.key, hashes.SHA256())
        cert_file, key_file = self.dir / f"{name}.cert.pem", self.dir / f"{name}.key.pem"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(_pem_key(key))
        return cert_file, key_file


@dataclass(frozen=True)
class TokenKeys:
    """A secret key written as Pulsar's `tokens create-secret-key` writes it (raw bytes)."""

    secret: bytes
    file: Path

    @classmethod
    def make(cls, directory: Path) -> TokenKeys:
        directory.mkdir(parents=True, exist_ok=True)
        secret = b"k" * 8 + bytes(range(24))
        path = directory / "token-secret.key"
        path.write_bytes(secret)
        return cls(secret, path)

    @property
    def spec(self) -> str:
        return f"file://{self.file}"

    @property
    def data_url(self) -> str:
        return "data:;base64," + base64.b64encode(self.secret).decode()

    def token(self, sub: str, expires_in_s: float | None = None, **claims: object) -> str:
        body: dict[str, object] = {"sub": sub, **claims}
        if expires_in_s is not None:
            body["exp"] = int(time.time() + expires_in_s)
        return jwt.encode(body, self.secret, algorithm="HS256")
