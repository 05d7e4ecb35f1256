"""The settings of kop's Kafka listeners and their security (docs/security.md): where
to listen and what to advertise, TLS, SASL, token keys, authorization. Part of
KopConfig (same `KOP_*` variables), kept apart because it is one subject."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from kop.sasl.mechanisms import MECHANISMS, OAUTHBEARER, PLAIN
from kop.security.tokens import PUBLIC_ALGS, TokenSettings
from kop.server.endpoints import (
    Endpoint,
    EndpointError,
    Listener,
    SecurityProtocol,
    parse_endpoints,
    parse_protocol_map,
    plan_listeners,
)


class ListenerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KOP_", extra="forbid")

    # Kafka listener
    listen_host: str = "0.0.0.0"
    port: int = Field(9092, ge=1, le=65535)
    advertised_host: str = "localhost"
    advertised_port: int | None = Field(None, ge=1, le=65535)
    # Kafka's listeners / advertised.listeners: `NAME://host:port,...`, a name being PLAINTEXT,
    # SSL, SASL_PLAINTEXT, SASL_SSL or one listener_security_protocol_map gives a protocol
    # (docs/security.md). Empty: one PLAINTEXT listener on listen_host:port, advertised
    # as advertised_host:advertised_port.
    listeners: str = ""
    advertised_listeners: str = ""
    listener_security_protocol_map: str = ""  # Kafka's: `INTERNAL:SASL_SSL,EXTERNAL:SSL`
    # SASL (docs/security.md): mechanisms, and the token key material in Pulsar's
    # notation (tokenSecretKey / tokenPublicKey: file:///path or data:;base64,...)
    sasl_enabled_mechanisms: str = PLAIN
    auth_token_secret_key: SecretStr = SecretStr("")
    auth_token_public_key: str = ""
    auth_token_public_alg: str = "RS256"
    auth_token_role_claim: str = "sub"
    auth_token_audience: str = ""
    auth_token_issuer: str = ""
    # Kafka's connections.max.reauth.ms (KIP-368): 0 = a session ends only with its token
    connections_max_reauth_ms: int = Field(0, ge=0)
    # Kafka's connection.failed.authentication.delay.ms
    connection_failed_authentication_delay_ms: int = Field(100, ge=0, le=60_000)
    # TLS of the SSL and SASL_SSL listeners (PEM files; reloaded on change and SIGHUP)
    ssl_cert_file: Path | None = None
    ssl_key_file: Path | None = None
    ssl_ca_file: Path | None = None
    ssl_client_auth: Literal["none", "requested", "required"] = "none"
    ssl_reload_check_s: float = Field(30.0, gt=0)
    # Authorization from Pulsar's permissions (docs/security.md). None: on when any
    # listener authenticates its clients (SASL, or TLS with client certificates).
    authorization_enabled: bool | None = None
    superuser_roles: str = ""  # as Pulsar's superUserRoles (kop cannot read the broker's)
    anonymous_role: str = ""  # as Pulsar's anonymousUserRole: a client nobody authenticated
    authorization_refresh_s: float = Field(30.0, gt=0)  # permissions cached at most this long
    # SCRAM users (kept in Pulsar) made at another instance sign in here within this
    scram_refresh_s: float = Field(5.0, gt=0)
    # Client quotas (kept in Pulsar) set at another instance hold here within this.
    quota_refresh_s: float = Field(5.0, gt=0)
    # Instance identity (docs/security.md, "Instances"): the secret every kop instance of
    # one cluster shares (a value, file:///path or data:;base64,...). Requests only kop
    # instances may make (transaction markers, verifications) are taken only from a
    # connection that proved it holds it; several instances refuse to start without it.
    cluster_secret: SecretStr = SecretStr("")
    # The admin HTTP (docs/security.md, "The admin HTTP API"): this bearer token may see
    # everything. Without it (and without authorization), only loopback clients may see
    # more than /healthz and /readyz.
    admin_token: SecretStr = SecretStr("")

    @field_validator("ssl_cert_file", "ssl_key_file", "ssl_ca_file")
    @classmethod
    def _readable_pem(cls, v: Path | None) -> Path | None:
        if v is not None and not v.is_file():
            raise ValueError(f"{v} is not a readable file")
        return v

    @property
    def kafka_advertised_port(self) -> int:
        return self.advertised_port or self.port

    @model_validator(mode="after")
    def _listeners(self) -> ListenerSettings:
        try:
            plan = self.listener_plan()
        except EndpointError as exc:
            raise ValueError(str(exc)) from None
        if any(lst.protocol.tls for lst in plan) and not (self.ssl_cert_file and self.ssl_key_file):
            raise ValueError("an SSL or SASL_SSL listener needs ssl_cert_file and ssl_key_file")
        if self.ssl_client_auth != "none" and self.ssl_ca_file is None:
            raise ValueError(f"ssl_client_auth={self.ssl_client_auth} needs ssl_ca_file")
        unknown = [m for m in self.mechanisms if m not in MECHANISMS]
        if unknown:
            raise ValueError(
                f"sasl_enabled_mechanisms: {', '.join(unknown)} not one of {', '.join(MECHANISMS)}"
            )
        sasl = any(lst.protocol.sasl for lst in plan)
        if sasl and OAUTHBEARER in self.mechanisms and not self.token_settings.configured:
            raise ValueError(
                "OAUTHBEARER needs auth_token_secret_key or auth_token_public_key "
                "(the key Pulsar's token authentication uses)"
            )
        if self.auth_token_public_alg not in PUBLIC_ALGS:
            raise ValueError(f"auth_token_public_alg is not one of {', '.join(PUBLIC_ALGS)}")
        return self

    @property
    def authorizing(self) -> bool:
        if self.authorization_enabled is not None:
            return self.authorization_enabled
        plan = self.listener_plan()
        mtls = self.ssl_client_auth != "none" and any(lst.protocol.tls for lst in plan)
        return mtls or any(lst.protocol.sasl for lst in plan)

    @property
    def superusers(self) -> frozenset[str]:
        return frozenset(r.strip() for r in self.superuser_roles.split(",") if r.strip())

    @property
    def mechanisms(self) -> list[str]:
        return [m.strip().upper() for m in self.sasl_enabled_mechanisms.split(",") if m.strip()]

    @property
    def token_settings(self) -> TokenSettings:
        return TokenSettings(
            secret_key=self.auth_token_secret_key.get_secret_value(),
            public_key=self.auth_token_public_key,
            public_alg=self.auth_token_public_alg,
            role_claim=self.auth_token_role_claim,
            audience=self.auth_token_audience,
            issuer=self.auth_token_issuer,
        )

    def listener_plan(self) -> list[Listener]:
        """Every listener with what is advertised for it (`port` / `advertised_host` /
        `advertised_port` are the one PLAINTEXT listener when `listeners` is empty)."""
        if not self.listeners.strip():
            plain = SecurityProtocol.PLAINTEXT
            bind = Endpoint(plain, self.listen_host, self.port)
            shown = Endpoint(plain, self.advertised_host, self.kafka_advertised_port)
            if self.advertised_listeners.strip():
                return plan_listeners([bind], parse_endpoints(self.advertised_listeners), "")
            return [Listener(bind, shown)]
        protocols = parse_protocol_map(self.listener_security_protocol_map)
        binds = parse_endpoints(self.listeners, protocols)
        if not binds:
            raise EndpointError("listeners is set but names no listener")
        return plan_listeners(
            binds, parse_endpoints(self.advertised_listeners, protocols), self.advertised_host
        )
