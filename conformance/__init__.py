"""Conformance: the same scenarios, run by unmodified Kafka clients against kop and
against a reference Apache Kafka broker, compared on what a user can observe."""
