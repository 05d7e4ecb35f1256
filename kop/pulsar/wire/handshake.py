"""The CONNECT/CONNECTED exchange that opens a connection, what it tells us, and the
broker's later AUTH_CHALLENGEs (its token refresh), answered with fresh credentials."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kop.aio.futures import retrieve
from kop.pulsar.wire.auth import Authentication, AuthUnavailable, NoAuth
from kop.pulsar.wire.errors import PulsarWireError
from kop.pulsar.wire.frames import (
    DEFAULT_MAX_MESSAGE_SIZE,
    FRAME_PADDING,
    FrameDecoder,
    encode_command,
)
from kop.pulsar.wire.keepalive import KeepAlive
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

log = logging.getLogger("kop.pulsar.wire.connection")  # where these records always went

T = pb.BaseCommand.Type
CLIENT_VERSION = "kop"
# The newest version this schema knows (v20: topic migration); Pulsar 4.0 speaks v21
# and answers with the lower of the two.
PROTOCOL_VERSION = max(pb.ProtocolVersion.values())


class Handshake:
    """`done` resolves on CONNECTED and fails if the broker refuses or the connection
    ends first. The broker's limits apply to the decoder before the next frame."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        address: str,
        proxy_to_broker_url: str | None,
        decoder: FrameDecoder,
        keepalive: KeepAlive,
        auth: Authentication | None = None,
        auth_data: bytes = b"",
    ) -> None:
        self._address = address
        self._proxy_to = proxy_to_broker_url
        self._auth = auth or NoAuth()
        self._auth_data = auth_data
        self._decoder = decoder
        self._keepalive = keepalive
        self.done: asyncio.Future[pb.CommandConnected] = loop.create_future()
        self.done.add_done_callback(retrieve)
        self.max_message_size = 0
        self.server_version = ""
        self.protocol_version = 0

    def connect_frame(self) -> bytes:
        connect = pb.CommandConnect(
            client_version=CLIENT_VERSION,
            protocol_version=PROTOCOL_VERSION,
            feature_flags=pb.FeatureFlags(supports_auth_refresh=True),
        )
        if self._auth.method:
            connect.auth_method_name = self._auth.method
            connect.auth_data = self._auth_data
        if self._proxy_to:
            connect.proxy_to_broker_url = self._proxy_to
        return encode_command(pb.BaseCommand(type=T.CONNECT, connect=connect))

    def on_connected(self, connected: pb.CommandConnected) -> None:
        self.server_version = connected.server_version
        self.protocol_version = connected.protocol_version
        if connected.HasField("max_message_size"):
            self.max_message_size = connected.max_message_size
        else:
            self.max_message_size = DEFAULT_MAX_MESSAGE_SIZE
        self._decoder.max_frame_size = self.max_message_size + 2 * FRAME_PADDING
        if not self.done.done():
            self.done.set_result(connected)
        self._keepalive.start()

    def on_auth_challenge(
        self, challenge: pb.CommandAuthChallenge, send: Callable[[pb.BaseCommand], None]
    ) -> None:
        """Answers with the credentials valid now (a token file re-read, an OAuth2
        token fetched again), as the Java client does; the broker closes the
        connection if they are refused."""
        asyncio.ensure_future(self._answer_challenge(send)).add_done_callback(retrieve)

    async def _answer_challenge(self, send: Callable[[pb.BaseCommand], None]) -> None:
        try:
            data = await self._auth.command_data()
        except AuthUnavailable as exc:
            log.warning("%s asked for fresh credentials; none to give: %s", self._address, exc)
            return
        response = pb.CommandAuthResponse(
            client_version=CLIENT_VERSION,
            protocol_version=PROTOCOL_VERSION,
            response=pb.AuthData(auth_method_name=self._auth.method, auth_data=data),
        )
        send(pb.BaseCommand(type=T.AUTH_RESPONSE, authResponse=response))

    def on_stray_error(self, request_id: int, error: PulsarWireError) -> None:
        """An ERROR for no pending request: before CONNECTED it refuses the CONNECT."""
        if not self.done.done():
            self.done.set_exception(error)
        else:
            log.warning("error from %s for no request (%d): %s", self._address, request_id, error)

    def fail(self, error: PulsarWireError) -> None:
        if not self.done.done():
            self.done.set_exception(error)
