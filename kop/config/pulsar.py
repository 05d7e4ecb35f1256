"""How kop reaches Pulsar: its service and admin URLs, credentials, TLS and listener
(Pulsar's own names: authPlugin/authParams, tlsTrustCertsFilePath, ...; docs/pulsar.md),
and the memory its producers and readers may hold. A part of `KopConfig` (kop.config.settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from kop.config.connections import ConnectionSettings
from kop.pulsar.wire.service_url import ServiceUrl, ServiceUrlError


class PulsarSettings(ConnectionSettings):
    model_config = SettingsConfigDict(env_prefix="KOP_", extra="forbid")

    pulsar_service_url: str = "pulsar://localhost:6650"
    pulsar_http_url: str = "http://localhost:8080"
    # Pulsar as our users run it: credentials, TLS, listener (Pulsar's own names:
    # authPlugin/authParams, tlsTrustCertsFilePath, ...; docs/pulsar.md)
    pulsar_auth_plugin: Literal["none", "token", "tls", "oauth2"] = "none"
    pulsar_auth_params: SecretStr = SecretStr("")
    pulsar_tls_trust_certs_file: Path | None = None
    pulsar_tls_hostname_verification: bool = True
    pulsar_tls_cert_file: Path | None = None
    pulsar_tls_key_file: Path | None = None
    pulsar_tls_allow_insecure: bool = False
    pulsar_listener_name: str = ""
    # Pulsar producers
    pulsar_send_budget_bytes: int = Field(32 * 1024 * 1024, ge=1024 * 1024)
    # Pulsar readers: bytes received and not yet taken by the log, all partitions together
    pulsar_read_ahead_bytes: int = Field(256 * 1024 * 1024, ge=1024 * 1024)

    @field_validator("pulsar_service_url")
    @classmethod
    def _pulsar_url(cls, v: str) -> str:
        try:
            ServiceUrl.parse(v)
        except ServiceUrlError as exc:
            raise ValueError(str(exc)) from None
        return v

    @field_validator("pulsar_http_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        try:
            ServiceUrl.parse(v.rstrip("/"), schemes=("http", "https"))
        except ServiceUrlError as exc:
            raise ValueError(str(exc)) from None
        return v

    @field_validator(
        "pulsar_tls_trust_certs_file",
        "pulsar_tls_cert_file",
        "pulsar_tls_key_file",
    )
    @classmethod
    def _readable(cls, v: Path | None) -> Path | None:
        if v is not None and not v.is_file():
            raise ValueError(f"{v} is not a readable file")
        return v

    @model_validator(mode="after")
    def _pulsar_security(self) -> PulsarSettings:
        if self.pulsar_auth_plugin == "tls" and not (
            self.pulsar_tls_cert_file and self.pulsar_tls_key_file
        ):
            raise ValueError(
                "pulsar_auth_plugin=tls needs pulsar_tls_cert_file and pulsar_tls_key_file"
            )
        if self.pulsar_auth_plugin in ("token", "oauth2") and not self.pulsar_auth_params:
            raise ValueError(
                f"pulsar_auth_plugin={self.pulsar_auth_plugin} needs pulsar_auth_params"
            )
        return self
