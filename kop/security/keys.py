"""Key material in Pulsar's notation (`tokenSecretKey`, `tokenPublicKey`), so that one
key file serves both Pulsar's token authentication and kop's."""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.serialization import load_der_public_key, load_pem_public_key

from kop.security.errors import SecurityConfigError


def read_key(spec: str) -> bytes:
    """`file:///path`, `data:;base64,...`, a path, or base64 text, as Pulsar reads them."""
    if spec.startswith("data:"):
        head, _, body = spec.partition(",")
        if not head.endswith(";base64"):
            return urllib.parse.unquote_to_bytes(body)
        return _b64(body, "the data: URL")
    if spec.startswith("file:"):
        path = Path(urllib.parse.urlparse(spec).path)
        return _read(path)
    if Path(spec).is_file():
        return _read(Path(spec))
    return _b64(spec, "the key (neither a file nor a data: or file: URL)")


def public_key(spec: str) -> Any:
    """A public key as Pulsar writes it (`pulsar tokens create-key-pair`: DER), or PEM."""
    raw = read_key(spec)
    try:
        if raw.lstrip().startswith(b"-----BEGIN"):
            return load_pem_public_key(raw)
        return load_der_public_key(raw)
    except ValueError as exc:
        raise SecurityConfigError(f"not a public key (DER or PEM): {exc}") from None


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SecurityConfigError(f"cannot read key file {path}: {exc.strerror}") from None


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise SecurityConfigError(f"{what} is not valid base64") from None
