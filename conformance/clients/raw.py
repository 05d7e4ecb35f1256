"""A bare Kafka protocol client for exact requests (retries with the same
sequence, malformed frames, unknown versions), used by tests and by the
conformance scenarios on bad input. Encodes with kio, independently of kop's
own codec module.

Like any client, it sends a partition's requests to the partition's leader, which
Metadata names (`leaders`): with several brokers (or kop instances) any other
answers NOT_LEADER_OR_FOLLOWER."""

from __future__ import annotations

import datetime
import io
import socket
import ssl
import struct
import time
import uuid
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.serial import entity_reader, entity_writer


class RawClient:
    #: the client id of every request; a class default so that tests which build a
    #: RawClient around their own socket (through ``__new__``) still carry one
    client_id = "raw-test"

    def __init__(
        self,
        port: int,
        timeout: float = 30.0,
        host: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,
        client_id: str = "raw-test",
    ) -> None:
        sock = socket.create_connection((host, port), timeout=timeout)
        self.client_id = client_id
        self.sock = tls.wrap_socket(sock, server_hostname=host) if tls is not None else sock
        self._correlation = 0

    @classmethod
    def at(cls, address: str, timeout: float = 30.0) -> RawClient:
        """A connection to `host:port` (the first of a bootstrap list)."""
        host, port = address.split(",")[0].rsplit(":", 1)
        return cls(int(port), timeout=timeout, host=host)

    def close(self) -> None:
        self.sock.close()

    def sasl(self, mechanism: str, auth_bytes: bytes) -> Any:
        """SaslHandshake v1 then one SaslAuthenticate v2; the SaslAuthenticate response
        (or the handshake's, when it refused the mechanism)."""
        shake = self.request(17, 1, mechanism=mechanism)
        if shake.error_code != ErrorCode.none:
            return shake
        return self.request(36, 2, auth_bytes=auth_bytes)

    def sasl_plain(self, user: str, password: str) -> Any:
        return self.sasl("PLAIN", f"\0{user}\0{password}".encode())

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv_exact(4))[0]
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by kop")
            buf += chunk
        return buf

    def encode_standalone(self, api_key: int, version: int, **fields: Any) -> tuple[int, bytes]:
        """`encode` without a connection (for feeding a server's stream directly)."""
        self._correlation = 0
        return self.encode(api_key, version, **fields)

    def encode(self, api_key: int, version: int, **fields: Any) -> tuple[int, bytes]:
        schema = load_request_schema(api_key, version)
        self._correlation += 1
        out = io.BytesIO()
        header = schema.__header_schema__(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=self._correlation,
            client_id=self.client_id,
        )
        entity_writer(schema.__header_schema__)(out, header)
        entity_writer(schema)(out, schema(**fields))
        return self._correlation, out.getvalue()

    def request(self, api_key: int, version: int, **fields: Any) -> Any:
        correlation, payload = self.encode(api_key, version, **fields)
        self.send_frame(payload)
        return self.decode(api_key, version, correlation, self.recv_frame())

    def produce_fields(self, topic: str, records: bytes, acks: int = -1) -> dict[str, Any]:
        partition = PartitionProduceData(index=0, records=records)
        return {
            "transactional_id": None,
            "acks": acks,
            "timeout": datetime.timedelta(seconds=30),
            "topic_data": (TopicProduceData(name=topic, partition_data=(partition,)),),
        }

    def produce(self, topic: str, records: bytes, acks: int = -1) -> tuple[ErrorCode, int]:
        """Produce v9 to partition 0: (error code, base offset)."""
        resp = self.request(0, 9, **self.produce_fields(topic, records, acks))
        part = resp.responses[0].partition_responses[0]
        return part.error_code, part.base_offset

    @staticmethod
    def fetch_fields(
        topic: str, offset: int, partition: int = 0, wait_ms: int = 0, min_bytes: int = 1
    ) -> dict[str, Any]:
        part = FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)
        return {
            "max_wait": datetime.timedelta(milliseconds=wait_ms),
            "min_bytes": min_bytes,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": (FetchTopic(topic=topic, partitions=(part,)),),
            "forgotten_topics_data": (),
            "rack_id": "",
        }

    def fetch(self, topic: str, offset: int, wait_ms: int = 0, min_bytes: int = 1) -> Any:
        """Fetch v12 of partition 0 at `offset`: the whole response."""
        return self.request(1, 12, **self.fetch_fields(topic, offset, 0, wait_ms, min_bytes))

    @staticmethod
    def decode(api_key: int, version: int, correlation: int, frame: bytes) -> Any:
        schema = load_response_schema(api_key, version)
        header, used = entity_reader(schema.__header_schema__)(frame, 0)
        assert header.correlation_id == correlation
        body, _ = entity_reader(schema)(frame, used)
        return body

    def is_closed_by_peer(self) -> bool:
        """Whether kop closes the connection within the socket's timeout."""
        timeout = self.sock.gettimeout()
        return self.wait_closed_by_peer(30.0 if timeout is None else timeout)

    def wait_closed_by_peer(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds for kop to close the connection: True as
        soon as it has (end of stream or reset), False if it is still open then.
        Nothing is expected on the wire meanwhile; a byte fails the test."""
        previous = self.sock.gettimeout()
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data = self.sock.recv(1)
        except TimeoutError:
            return False
        except OSError:  # reset by kop
            return True
        finally:
            self.sock.settimeout(previous)
        assert data == b"", f"kop sent {data!r} unasked instead of closing"
        return True


def leaders(bootstrap: str, topic: str, within: float = 30.0) -> dict[int, str]:
    """Each partition's leader as `host:port`, from Metadata at the bootstrap, once
    every partition has one; {} for a topic the broker does not know. Asked again
    while a leader is missing: a new topic's leaders are named a moment after it is."""
    deadline = time.monotonic() + within
    client = RawClient.at(bootstrap)
    try:
        while True:
            meta = client.request(
                3, 12, topics=(MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=topic),),
                allow_auto_topic_creation=False, include_topic_authorized_operations=False,
            )  # fmt: skip
            found = _leaders(meta)
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: no leader for every partition in {within:.0f} s")
            time.sleep(0.2)
    finally:
        client.close()


def _leaders(meta: Any) -> dict[int, str] | None:
    """A Metadata response's partition leaders (None while one has no live leader)."""
    brokers = {b.node_id: f"{b.host}:{b.port}" for b in meta.brokers}
    topic = meta.topics[0]
    if topic.error_code.name == "unknown_topic_or_partition":
        return {}
    found = {p.partition_index: brokers.get(p.leader_id) for p in topic.partitions}
    if topic.error_code.name != "none" or not found or None in found.values():
        return None
    return {p: leader for p, leader in found.items() if leader is not None}


def to_leader(bootstrap: str, topic: str, partition: int = 0, timeout: float = 15.0) -> RawClient:
    """A connection to the partition's leader, or to the bootstrap for a topic that
    does not exist (any broker answers for it)."""
    return RawClient.at(leaders(bootstrap, topic).get(partition, bootstrap), timeout)
