"""`log_format`: plain lines (the default), or one JSON object per line for a log
pipeline, with the connection and request each line was written for
(kop.server.log_context). The JSON encoding is python-json-logger's."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from pythonjsonlogger.json import JsonFormatter

from kop.protocol.messages import ApiKey
from kop.server.log_context import PEER, PRINCIPAL, REQUEST

PLAIN = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Context(logging.Filter):
    """Adds the connection's and request's fields to each record (empty outside one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.peer = PEER.get()
        record.principal = PRINCIPAL.get()
        request = REQUEST.get()
        if request is None:
            record.api = record.api_version = record.correlation_id = record.client_id = None
        else:
            key, record.api_version, record.correlation_id, record.client_id = request
            try:
                record.api = ApiKey(key).name.lower()
            except ValueError:
                record.api = str(key)
        return True


def configure(level: str, fmt: str, stream: TextIO | None = None) -> None:
    """Logging of the whole process to `stream` (stderr), in `fmt` ("plain" or "json")."""
    handler = logging.StreamHandler(stream or sys.stderr)
    if fmt == "json":
        handler.addFilter(_Context())
        handler.setFormatter(
            JsonFormatter(
                "%(levelname)s %(name)s %(message)s",
                rename_fields={"levelname": "level", "name": "logger"},
                timestamp="time",  # ISO 8601, UTC
            )
        )
    else:
        handler.setFormatter(logging.Formatter(PLAIN))
    logging.basicConfig(level=level, handlers=[handler], force=True)
