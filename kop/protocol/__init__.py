"""Sans-IO Kafka codec: bytes in, typed objects out and back. No asyncio, no Pulsar."""
