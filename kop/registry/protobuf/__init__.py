"""Protobuf schemas: their descriptors (descriptors.py), compatibility (compat.py), and a
topic's schema as Pulsar's PROTOBUF_NATIVE (native.py)."""
