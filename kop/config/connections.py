"""kop's settings for client connections: how many, from where, how fast, and what a
request and an answer may hold (docs/decisions.md, "Bounded under abuse"). A part of
`KopConfig` (kop.config.settings) of its own because it is one job: what one client may cost."""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from kop.config.listeners import ListenerSettings


class ConnectionSettings(ListenerSettings):
    model_config = SettingsConfigDict(env_prefix="KOP_", extra="forbid")

    # Limits and timing
    max_request_bytes: int = Field(100 * 1024 * 1024, ge=1024)
    max_inflight_requests: int = Field(32, ge=1, le=10000)
    idle_timeout_s: float = Field(600.0, gt=0)
    # Bounded under abuse (docs/decisions.md, "Bounded under abuse"): connections, a
    # frame's arrival, an answer's departure, request and answer bytes held in total.
    max_connections: int = Field(1000, ge=1, le=1_000_000)
    # Per client address (docs/decisions.md D6; kop.server.addresses): Kafka's
    # max.connections.per.ip and its overrides (`host:count,...`, IPs or names), and
    # KIP-612's per-IP connection_creation_rate (a second, 10 s of it at once). Then
    # from accept to a whole request (on a SASL listener, to authentication).
    max_connections_per_ip: int = Field(200, ge=1, le=1_000_000)
    max_connections_per_ip_overrides: str = ""
    max_connection_creation_rate_per_ip: float = Field(50.0, gt=0)
    connection_setup_timeout_s: float = Field(10.0, gt=0)
    max_namespaces_per_request: int = Field(100, ge=1)  # other namespaces one request names

    request_receive_timeout_s: float = Field(60.0, gt=0)
    response_send_timeout_s: float = Field(60.0, gt=0)
    max_queued_request_bytes: int = Field(64 * 1024 * 1024, ge=1024 * 1024)
    max_queued_response_bytes: int = Field(128 * 1024 * 1024, ge=1024 * 1024)

    @field_validator("max_connections_per_ip_overrides")
    @classmethod
    def _per_ip_overrides(cls, v: str) -> str:
        from kop.server.addresses import parse_overrides  # the listener's own parser

        parse_overrides(v)
        return v
