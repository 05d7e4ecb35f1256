"""kop: a Kafka wire-protocol gateway for Apache Pulsar."""

__version__ = "0.1.0"
