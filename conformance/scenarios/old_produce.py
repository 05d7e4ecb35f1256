"""Produce v0-v2 (KAFKA-18659), sent as exact frames: Kafka 4.x advertises Produce
from v0, so that older librdkafka keeps compressing, but serves it from v3 and
closes the connection on an older request, whatever the records' magic."""

from __future__ import annotations

import socket
import struct
import zlib
from typing import Any

from conformance.clients.raw import leaders
from conformance.model import Ctx, Observation, scenario
from conformance.scenarios.bad_input import RAW, batch
from conformance.setup import create_topic


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def legacy_message(magic: int, value: bytes) -> bytes:
    """A message set of one magic 0 or 1 message (no key), at offset 0."""
    body = struct.pack(">bb", magic, 0)
    if magic == 1:
        body += struct.pack(">q", 1_700_000_000_000)
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF) + body
    return struct.pack(">qi", 0, len(message)) + message


def old_produce(version: int, topic: str, records: bytes) -> bytes:
    """A Produce v0-v2 request (these versions have no transactional id)."""
    header = struct.pack(">hhi", 0, version, 9) + _string("old-produce")
    body = struct.pack(">hi", -1, 30_000) + struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">ii", 1, 0) + struct.pack(">i", len(records)) + records
    return header + body


def exchange(bootstrap: str, payload: bytes) -> str:
    """ "answered" or "connection closed"."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        try:
            return "answered" if len(sock.recv(4)) == 4 else "connection closed"
        except (ConnectionError, OSError):
            return "connection closed"


def produce_range(bootstrap: str) -> list[int]:
    """Produce's (min, max) in an ApiVersions v0 answer."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        request = struct.pack(">hhi", 18, 0, 1) + _string("old-produce")
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", sock.recv(4))[0]
        frame = b""
        while len(frame) < size:
            frame += sock.recv(size - len(frame))
    _, _, count = struct.unpack_from(">ihi", frame, 0)
    for i in range(count):
        key, low, high = struct.unpack_from(">hhh", frame, 10 + 6 * i)
        if key == 0:
            return [low, high]
    return []


@scenario("bad-input/old-produce", RAW, quick=True)
def old_produce_versions(ctx: Ctx, _client: object) -> Observation:
    """ApiVersions advertises Produce from v0; a Produce v0, v1 or v2 with a magic 2
    batch, a magic 1 or a magic 0 message set (sent to the partition's leader) closes
    the connection."""
    topic = ctx.name("old-produce")
    create_topic(ctx.bootstrap, topic)
    leader = leaders(ctx.bootstrap, topic)[0]
    out: dict[str, Any] = {"produce min version": produce_range(ctx.bootstrap)[0]}
    records = {
        "magic 2": batch([b"v"]),
        "magic 1": legacy_message(1, b"v"),
        "magic 0": legacy_message(0, b"v"),
    }
    for version in (0, 1, 2):
        for label, data in records.items():
            out[f"v{version} {label}"] = exchange(leader, old_produce(version, topic, data))
    return out
