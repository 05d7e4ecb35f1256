"""kop's Schema Registry settings (docs/schema-registry.md): where it listens, how
old a read of its table may be before another instance's changes show in a listing,
and what one namespace may hold."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class RegistrySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KOP_", extra="forbid")

    schema_registry_host: str = "0.0.0.0"
    schema_registry_port: int = Field(8081, ge=0, le=65535)  # 0: no registry
    # HTTPS with the Kafka listeners' certificate (ssl_cert_file, ssl_key_file): the
    # credentials a client sends are tokens
    schema_registry_tls: bool = False
    # Open connections at once (one more is closed when accepted)
    schema_registry_max_connections: int = Field(1000, ge=1, le=1_000_000)
    schema_registry_fresh_s: float = Field(1.0, gt=0, le=60)
    # How often a partition produced to asks whether its topic's schema changed (the
    # registry here tells it at once; another instance's within this)
    schema_registry_framing_refresh_s: float = Field(5.0, gt=0, le=3600)
    # What one namespace may hold (kop reads a namespace's records whole)
    schema_registry_max_subjects: int = Field(10_000, ge=1, le=1_000_000)
    schema_registry_max_versions: int = Field(1_000, ge=1, le=100_000)
