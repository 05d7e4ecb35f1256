"""Whole gateways over the in-memory storage: real Kafka clients and raw frames against a
kop whose Pulsar is the memory twin (tests/gateway/memory_gateway.py). No Pulsar, no network
but loopback; run with the unit and simulation tiers."""
