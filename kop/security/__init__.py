"""Who a Kafka client is, and what it may do: SASL mechanisms, token validation,
tenant selection and the permission model. Sans-IO except for the permission
cache, which asks the storage port (docs/security.md)."""
