"""Requests from one kop instance to another over the Kafka protocol, as Kafka's
brokers talk to each other: to the other instance's PLAINTEXT listener (kop's
inter-instance listener, as Kafka's inter.broker.listener), over kept connections (a
few idle ones per instance; one found closed is replaced once). Each connection first
proves it is a kop instance of this cluster by the `KOP-PEER` SASL exchange over the
cluster secret (kop.sasl.peers); an instance takes such requests only from a
connection so proven (`is_instance`), never by a client id. Used by the transaction
coordinator (kop.txn.peers) and by share groups' offsets (kop.groups.share.offsets).
"""

from __future__ import annotations

import asyncio
import io
import re
import struct
from typing import Any

from kio.index import load_response_schema
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from kop.cluster.member import Member
from kop.protocol.errors import ErrorCode
from kop.sasl.peers import PEER_MECHANISM, ClusterSecret, final_message, first_message

PEER_PREFIX = "kop-peer-"  # the client id of kop's requests (for logs, never trusted)
_SIZE = struct.Struct(">i")
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]
KEPT_IDLE = 4  # connections kept open per instance between requests


def kafka_name(partition_topic: str) -> str:
    """The Kafka name any instance resolves to the partition's topic: its full Pulsar
    name (a non-partitioned topic's partition is the topic itself). Peers name topics
    so: the asking instance's tenant is not the client's."""
    return re.sub(r"-partition-\d+$", "", partition_topic)


class PeerUnreachable(Exception):
    """The other instance could not be asked (down, not listening, a bad answer)."""


class PeerClient:
    """`ask` sends one kio request entity, at its class's version, and returns the
    decoded answer. Every request sent through it must be one that may be repeated:
    a connection found closed as it is used is replaced and the request sent again."""

    def __init__(
        self, instance: str, secret: ClusterSecret | None = None, timeout_s: float = 10.0
    ) -> None:
        self._instance = instance  # this instance's name, which KOP-PEER proves
        self._secret = secret  # None: no proof to give (the others refuse these requests)
        self._timeout_s = timeout_s
        self._idle: dict[tuple[str, int], list[Connection]] = {}
        self._correlation = 0

    async def close(self) -> None:
        for kept in self._idle.values():
            for _reader, writer in kept:
                writer.close()
        self._idle.clear()

    async def ask(self, to: Member, body: Any) -> Any:
        address = dict(((n, (h, p)) for n, h, p in to.listeners))
        if "PLAINTEXT" not in address and to.listeners:
            raise PeerUnreachable(f"instance {to.node_id} has no PLAINTEXT listener")
        host, port = address.get("PLAINTEXT", (to.host, to.port))
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._request(host, port, body)
        except (OSError, EOFError, TimeoutError, ValueError) as exc:
            raise PeerUnreachable(f"{host}:{port}: {exc!r}") from exc

    async def _request(self, host: str, port: int, body: Any) -> Any:
        """Over an idle kept connection, or a new one. One that the other instance
        closed meanwhile (a restart, an idle timeout) fails as it is used: the
        request is sent once more over a new one (each of these requests may be
        repeated: a marker written twice or a partition added twice changes nothing
        the second time). A connection whose request failed, or was cancelled, is
        closed, since its stream may be out of step."""
        address = (host, port)
        idle = self._idle.setdefault(address, [])
        while True:
            kept = idle.pop() if idle else None
            connection = kept or await asyncio.open_connection(host, port)
            try:
                if kept is None:
                    await self._prove(connection)
                answer = await self._exchange(connection, body)
            except BaseException as exc:
                connection[1].close()
                if kept is None or not isinstance(exc, (OSError, EOFError)):
                    raise
                continue
            if len(idle) < KEPT_IDLE:
                idle.append(connection)
            else:
                connection[1].close()
            return answer

    async def _prove(self, connection: Connection) -> None:
        """A new connection proves it is an instance of this cluster (KOP-PEER)."""
        if self._secret is None:
            return
        instance = self._instance
        shake = await self._exchange(connection, SaslHandshakeRequest(mechanism=PEER_MECHANISM))
        if shake.error_code != 0:
            raise ValueError(f"KOP-PEER refused: {ErrorCode(shake.error_code).name}")
        first, nonce = first_message(instance)
        challenge = await self._sasl_step(connection, first)
        await self._sasl_step(connection, final_message(self._secret, instance, nonce, challenge))

    async def _sasl_step(self, connection: Connection, message: bytes) -> bytes:
        answer = await self._exchange(connection, SaslAuthenticateRequest(auth_bytes=message))
        if answer.error_code != 0:
            raise ValueError(f"KOP-PEER failed: {answer.error_message}")
        return bytes(answer.auth_bytes)

    async def _exchange(self, connection: Connection, body: Any) -> Any:
        reader, writer = connection
        self._correlation = correlation = (self._correlation + 1) % 2**31
        schema = type(body)
        api, version = int(schema.__api_key__), int(schema.__version__)
        out = io.BytesIO()
        header = schema.__header_schema__(
            request_api_key=i16(api), request_api_version=i16(version),
            correlation_id=i32(correlation), client_id=PEER_PREFIX + self._instance,
        )  # fmt: skip
        entity_writer(schema.__header_schema__)(out, header)
        entity_writer(schema)(out, body)
        frame = out.getvalue()
        writer.write(_SIZE.pack(len(frame)) + frame)
        await writer.drain()
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        data = await reader.readexactly(size)
        response = load_response_schema(api, version)
        head, used = entity_reader(response.__header_schema__)(data, 0)
        if head.correlation_id != correlation:
            raise ValueError(f"answer to request {head.correlation_id}, not {correlation}")
        answer, _ = entity_reader(response)(data, used)
        return answer
