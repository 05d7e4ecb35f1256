"""JWT validation with the key material of Pulsar's token authentication: a token
Pulsar accepts for a role, kop accepts for the same role (and no other)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jwt

from kop.security.errors import AuthenticationFailed, SecurityConfigError
from kop.security.keys import public_key, read_key

# A secret key signs with any HMAC algorithm (Pulsar's `tokens create --secret-key`
# takes --signing-algorithm); a public key with the one configured for it.
_HMAC = ("HS256", "HS384", "HS512")
PUBLIC_ALGS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512")


@dataclass(frozen=True, slots=True)
class TokenSettings:
    secret_key: str = ""  # Pulsar's tokenSecretKey notation
    public_key: str = ""  # Pulsar's tokenPublicKey notation
    public_alg: str = "RS256"  # Pulsar's tokenPublicAlg
    role_claim: str = "sub"  # Pulsar's tokenAuthClaim
    audience: str = ""  # Pulsar's tokenAudience (checked against `aud` when set)
    issuer: str = ""  # checked against `iss` when set

    @property
    def configured(self) -> bool:
        return bool(self.secret_key or self.public_key)


@dataclass(frozen=True, slots=True)
class TokenIdentity:
    role: str
    expires_at: float | None  # the `exp` claim; None: the token never expires


class TokenValidator:
    def __init__(self, settings: TokenSettings, clock: Callable[[], float] = time.time) -> None:
        if settings.secret_key and settings.public_key:
            raise SecurityConfigError(
                "set auth_token_secret_key or auth_token_public_key, not both"
            )
        if settings.public_alg not in PUBLIC_ALGS:
            algs = ",".join(PUBLIC_ALGS)
            raise SecurityConfigError(
                f"auth_token_public_alg {settings.public_alg!r} not in {algs}"
            )
        self._settings = settings
        self._clock = clock
        self._key: Any
        if settings.secret_key:
            self._key, self._algs = read_key(settings.secret_key), list(_HMAC)
        elif settings.public_key:
            self._key, self._algs = public_key(settings.public_key), [settings.public_alg]
        else:
            raise SecurityConfigError(
                "token authentication needs auth_token_secret_key or auth_token_public_key"
            )

    def validate(self, token: str) -> TokenIdentity:
        s = self._settings
        try:
            claims = jwt.decode(
                token,
                self._key,
                algorithms=self._algs,
                audience=s.audience or None,
                issuer=s.issuer or None,
                options={"verify_exp": False, "verify_aud": bool(s.audience)},
            )
        except jwt.PyJWTError as exc:
            raise AuthenticationFailed(f"token refused: {exc}") from None
        expires = claims.get("exp")
        if expires is not None:
            if not isinstance(expires, int | float) or isinstance(expires, bool):
                raise AuthenticationFailed("token refused: exp is not a number")
            if expires <= self._clock():
                raise AuthenticationFailed("token refused: expired")
        role = claims.get(s.role_claim)
        if not isinstance(role, str) or not role:
            raise AuthenticationFailed(f"token refused: no {s.role_claim!r} claim naming a role")
        return TokenIdentity(role, float(expires) if expires is not None else None)
