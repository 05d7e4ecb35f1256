"""The decoders the fuzzer runs in a worker process (`fuzz.isolated`), by name."""

from __future__ import annotations

import typing
from typing import Any

from kio.index import load_request_schema
from kio.serial import entity_reader

from kop.protocol.messages import decode_request, peek_header

TARGETS = {
    "request": "kop.protocol.messages:decode_request",
    "request-unguarded": "fuzz.targets:kio_alone",
}
# What each target may raise: kop's own errors for a request it cannot serve; kio
# alone raises several types for inputs it refuses (an abort is what is looked for).
ALLOWED = {
    "request": [
        "kop.protocol.messages:MalformedRequest",
        "kop.protocol.messages:UnsupportedVersion",
    ],
    "request-unguarded": ["builtins:Exception"],
}


def kio_alone(frame: bytes) -> Any:
    """kio's reader without kop's bounds pass in front: what kop ran before issue 18.
    The fuzzer must find aborts here, or it is not looking hard enough."""
    head = peek_header(frame)
    schema = load_request_schema(head.api_key, head.api_version)
    _header, used = entity_reader(typing.cast(Any, schema.__header_schema__))(frame, 0)
    return entity_reader(schema)(frame, used)


__all__ = ["TARGETS", "decode_request", "kio_alone"]
