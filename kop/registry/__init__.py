"""A Confluent-compatible Schema Registry served by kop, kept in Pulsar (issue 38)."""
