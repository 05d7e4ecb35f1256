"""A fake Kafka broker (or several, as one cluster) for tools/kafka.py's health
probe: just the requests the probe sends, answered as Kafka 4.3.1 answers them."""

from __future__ import annotations

import socket
import socketserver
import struct
import threading
from dataclasses import dataclass, field

from tests.unit.tool_module import load_tool

tool = load_tool("kafka.py", "kop_tools_kafka")  # `kafka` is kafka-python's package

CLUSTER_ID = "q1Sh-9_ISia_zwGINzRvyQ"
NOT_COORDINATOR, LOAD_IN_PROGRESS, NOT_AVAILABLE, UNKNOWN_TOPIC = 16, 14, 15, 3


def _str(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _array(items: list[bytes]) -> bytes:
    return struct.pack(">i", len(items)) + b"".join(items)


@dataclass
class Coordinator:
    """What the fake broker's group coordinator answers."""

    find_error: int = 0  # FindCoordinator's error code
    offsets_partitions: int = 50  # 0: __consumer_offsets does not exist
    group_errors: dict[str, int] = field(default_factory=dict)  # DescribeGroups, by group
    every_group_error: int = 0
    asked: list[str] = field(default_factory=list)  # the groups DescribeGroups was asked about
    # A cluster: node id -> port of each fake broker sharing this coordinator; partition
    # p of __consumer_offsets is led by the (p mod n)-th. Empty: one broker, node 1.
    nodes: dict[int, int] = field(default_factory=dict)
    asked_at: dict[int, list[str]] = field(default_factory=dict)  # by the node asked

    def leader(self, partition: int) -> int:
        ids = sorted(self.nodes) or [1]
        return ids[partition % len(ids)]


class FakeKafka(socketserver.BaseRequestHandler):
    """Answers ApiVersions v0, Metadata v4, FindCoordinator v1 and DescribeGroups v0
    like a Kafka broker whose brokers are registered; a group whose partition another
    broker leads gets NOT_COORDINATOR, as on Kafka."""

    server: Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        while True:
            head = sock.recv(4, socket.MSG_WAITALL)
            if len(head) < 4:
                return
            (size,) = struct.unpack(">i", head)
            data = sock.recv(size, socket.MSG_WAITALL)
            api, _version, correlation, n = struct.unpack_from(">hhih", data)
            body = self._answer(api, data[10 + max(n, 0) :])
            frame = struct.pack(">i", correlation) + body
            sock.sendall(struct.pack(">i", len(frame)) + frame)

    def _answer(self, api: int, body: bytes) -> bytes:
        c = self.server.coordinator
        if api == 18:  # ApiVersions v0
            ranges = [(3, 0, 13), (10, 0, 6), (15, 0, 6), (18, 0, 4)]
            return struct.pack(">h", 0) + _array([struct.pack(">hhh", *r) for r in ranges])
        if api == 3:  # Metadata v4
            nodes = c.nodes or {1: self.server.server_address[1]}
            brokers = [
                struct.pack(">i", node) + _str("127.0.0.1") + struct.pack(">i", port) + _str(None)
                for node, port in sorted(nodes.items())
            ]
            topics = []
            if struct.unpack_from(">i", body)[0] > 0:  # asked about __consumer_offsets
                parts = [
                    struct.pack(">hii", 0, p, c.leader(p))
                    + _array([struct.pack(">i", c.leader(p))]) * 2
                    for p in range(c.offsets_partitions)
                ]
                error = 0 if c.offsets_partitions else UNKNOWN_TOPIC
                topics.append(
                    struct.pack(">h", error) + _str("__consumer_offsets") + b"\x01" + _array(parts)
                )
            return (
                struct.pack(">i", 0) + _array(brokers) + _str(CLUSTER_ID)
                + struct.pack(">i", 1) + _array(topics)
            )  # fmt: skip
        if api == 10:  # FindCoordinator v1
            return (
                struct.pack(">ih", 0, c.find_error) + _str(None) + struct.pack(">i", 1)
                + _str("127.0.0.1") + struct.pack(">i", self.server.server_address[1])
            )  # fmt: skip
        if api == 15:  # DescribeGroups v0
            (count,) = struct.unpack_from(">i", body)
            pos, groups = 4, []
            for _ in range(count):
                (n,) = struct.unpack_from(">h", body, pos)
                groups.append(body[pos + 2 : pos + 2 + n].decode())
                pos += 2 + n
            c.asked = groups
            c.asked_at[self.server.node_id] = groups
            return _array([self._dead_group(g, self._group_error(g)) for g in groups])
        raise AssertionError(f"unexpected api key {api}")

    def _group_error(self, group: str) -> int:
        c = self.server.coordinator
        if c.leader(tool.offsets_partition(group, c.offsets_partitions)) != self.server.node_id:
            return NOT_COORDINATOR
        return c.group_errors.get(group, c.every_group_error)

    @staticmethod
    def _dead_group(group: str, error: int) -> bytes:
        """A DescribeGroups v0 entry for a group with no members (state Dead)."""
        empty = _str("Dead") + _str("") + _str("") + _array([])
        return struct.pack(">h", error) + _str(group) + empty


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    coordinator: Coordinator
    node_id: int = 1


def serve(port: int, coordinator: Coordinator, node_id: int = 1) -> Server:
    """A fake broker on `port` (0: any free one), answering in a thread of its own."""
    server = Server(("127.0.0.1", port), FakeKafka)
    server.coordinator, server.node_id = coordinator, node_id
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
