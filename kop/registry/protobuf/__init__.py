"""Protobuf schemas: their descriptors (descriptors.py) and compatibility (compat.py)."""
