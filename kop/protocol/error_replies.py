"""The answer to a request whose body could not be used: its API's response with the
error code set and every required field at a neutral value, where the API has a
top-level error code."""

from __future__ import annotations

import dataclasses
import datetime
import typing
from typing import Any

from kio.serial._introspect import is_optional
from kio.static.protocol import Entity

from kop.protocol.errors import ErrorCode
from kop.protocol.messages import RequestHeader, response_schema

# What an error reply puts in the required fields of any API's response besides its
# error code (those a response does not have are left out).
_ERROR_REPLY: dict[str, Any] = {
    "producer_id": -1,
    "producer_epoch": -1,
    "node_id": -1,
    "port": -1,
    "host": "",
    "session_id": 0,
    "error_message": None,
    "generation_id": -1,
    "protocol_type": None,
    "protocol_name": None,
    "leader": "",
    "member_id": "",
    "skip_assignment": False,
    "assignment": b"",
    "auth_bytes": b"",
    "member_epoch": 0,
}


def top_level_error_response(header: RequestHeader, code: ErrorCode) -> Entity | None:
    """An error reply for a request whose body could not be used, if the API has a
    top-level error code; None means the only honest answer is closing the connection."""
    cls = response_schema(header.api_key, header.api_version)
    fields = dataclasses.fields(cls)
    if not any(f.name == "error_code" for f in fields):
        return None
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {"error_code": code}
    for f in fields:
        if f.name == "error_code":
            continue
        if f.name in ("throttle_time", "heartbeat_interval", "acquisition_lock_timeout"):
            values[f.name] = datetime.timedelta(0)
        elif f.name in _ERROR_REPLY:
            value = _ERROR_REPLY[f.name]
            if isinstance(value, bytes) and hints[f.name] is not bytes:
                value = None  # ConsumerGroupHeartbeat's assignment is a structure, nullable
            # A field null in some versions (JoinGroup's protocol_name from v7) is ""
            # where the version does not allow null.
            values[f.name] = "" if value is None and not is_optional(f) else value
        elif _is_array(hints[f.name]):
            values[f.name] = ()  # empty, also where the array may be null
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            return None  # a required field none of the values above covers
    return cls(**values)


def _is_array(hint: Any) -> bool:
    return any(typing.get_origin(h) is tuple for h in (hint, *typing.get_args(hint)))
