"""The KIP-848 consumer group protocol: coordinator, reconciliation, assignors."""
