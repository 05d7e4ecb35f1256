"""Token validation with Pulsar's key notation: what Pulsar accepts for a role, kop
accepts for that role, and nothing else (wrong key, expired, unsigned, wrong
audience or issuer, no role claim)."""

from __future__ import annotations

import base64
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from kop.security.errors import AuthenticationFailed, SecurityConfigError
from kop.security.tokens import TokenSettings, TokenValidator
from tests.tls_material import TokenKeys


@pytest.fixture
def keys(tmp_path: Path) -> TokenKeys:
    return TokenKeys.make(tmp_path)


def test_a_secret_key_as_file_url_or_data_url_validates_the_same_token(keys: TokenKeys) -> None:
    token = keys.token("alice")
    for spec in (keys.spec, keys.data_url, str(keys.file)):
        ident = TokenValidator(TokenSettings(secret_key=spec)).validate(token)
        assert ident.role == "alice" and ident.expires_at is None


def test_refused_tokens(keys: TokenKeys) -> None:
    validator = TokenValidator(TokenSettings(secret_key=keys.spec))
    other = jwt.encode({"sub": "alice"}, b"x" * 32, algorithm="HS256")
    unsigned = jwt.encode({"sub": "alice"}, None, algorithm="none")
    expired = keys.token("alice", expires_in_s=-5)
    no_role = jwt.encode({"name": "alice"}, keys.secret, algorithm="HS256")
    for token in (other, unsigned, expired, no_role, "not.a.jwt", ""):
        with pytest.raises(AuthenticationFailed):
            validator.validate(token)


def test_expiry_is_reported(keys: TokenKeys) -> None:
    validator = TokenValidator(TokenSettings(secret_key=keys.spec), clock=lambda: 1000.0)
    token = jwt.encode({"sub": "a", "exp": 1060}, keys.secret, algorithm="HS256")
    assert validator.validate(token).expires_at == 1060.0
    later = TokenValidator(TokenSettings(secret_key=keys.spec), clock=lambda: 1060.0)
    with pytest.raises(AuthenticationFailed):
        later.validate(token)


def test_role_claim_audience_and_issuer(keys: TokenKeys) -> None:
    settings = TokenSettings(
        secret_key=keys.spec, role_claim="role", audience="kop", issuer="https://idp"
    )
    validator = TokenValidator(settings)
    good = keys.token("ignored", role="bob", aud="kop", iss="https://idp")
    assert validator.validate(good).role == "bob"
    for bad in (
        keys.token("x", role="bob", aud="other", iss="https://idp"),
        keys.token("x", role="bob", iss="https://idp"),
        keys.token("x", role="bob", aud="kop", iss="https://evil"),
        keys.token("x", aud="kop", iss="https://idp"),
    ):
        with pytest.raises(AuthenticationFailed):
            validator.validate(bad)


def test_a_public_key_in_der_as_pulsar_writes_it_or_pem(tmp_path: Path) -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = private.public_key()
    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (tmp_path / "public.key").write_bytes(der)
    token = jwt.encode({"sub": "carol"}, private, algorithm="RS256")
    for spec in (
        f"file://{tmp_path / 'public.key'}",
        "data:;base64," + base64.b64encode(pem).decode(),
    ):
        assert TokenValidator(TokenSettings(public_key=spec)).validate(token).role == "carol"
    # An HS256 token signed with the public key's bytes (the algorithm confusion attack).
    forged = jwt.encode({"sub": "carol"}, b"s" * 32, algorithm="HS256")
    with pytest.raises(AuthenticationFailed):
        TokenValidator(TokenSettings(public_key=f"file://{tmp_path / 'public.key'}")).validate(
            forged
        )


def test_bad_key_material_is_a_configuration_error(tmp_path: Path) -> None:
    for settings in (
        TokenSettings(),
        TokenSettings(secret_key="file:///nonexistent/key"),
        TokenSettings(secret_key="%%% not base64"),
        TokenSettings(public_key="data:;base64," + base64.b64encode(b"junk").decode()),
        TokenSettings(secret_key="a", public_key="b"),
        TokenSettings(public_key="data:;base64,AA==", public_alg="HS256"),
    ):
        with pytest.raises(SecurityConfigError):
            TokenValidator(settings)
