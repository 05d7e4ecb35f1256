"""Pulsar's wire schema (PulsarApi.proto, vendored from Apache Pulsar) and the code
protoc generates from it; regenerate with `python tools/gen_pulsar_proto.py`."""
