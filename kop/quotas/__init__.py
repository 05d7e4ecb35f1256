"""Kafka's client quotas (KIP-13, KIP-124, KIP-219, KIP-546): byte rates and a share
of the event loop's time per user and client id, set with AlterClientQuotas, kept in
Pulsar, and enforced by answering with `throttle_time_ms` and not reading the
connection's next request for that long (docs/security.md, "Quotas")."""
