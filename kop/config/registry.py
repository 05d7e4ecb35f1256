"""kop's Schema Registry settings (docs/schema-registry.md): where it listens, and how
old a read of its table may be before another instance's changes show in a listing."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class RegistrySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KOP_", extra="forbid")

    schema_registry_host: str = "0.0.0.0"
    schema_registry_port: int = Field(8081, ge=0, le=65535)  # 0: no registry
    schema_registry_fresh_s: float = Field(1.0, gt=0, le=60)
