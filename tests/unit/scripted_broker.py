"""A socket that speaks just enough of Pulsar's binary protocol to check what kop's
client sends when it connects: CONNECT's credentials and proxy target, the answer
to an AUTH_CHALLENGE, LOOKUP's listener. Tests of behaviour against Pulsar itself
run on a real broker (tests/integration, tests/cluster); this checks the frames."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

from kop.pulsar.wire.frames import FrameDecoder, encode_command
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

T = pb.BaseCommand.Type
Script = Callable[["ScriptedBroker", asyncio.StreamWriter, pb.BaseCommand], None]


def connected(max_message_size: int = 5 << 20) -> pb.BaseCommand:
    return pb.BaseCommand(
        type=T.CONNECTED,
        connected=pb.CommandConnected(
            server_version="scripted", protocol_version=21, max_message_size=max_message_size
        ),
    )


def answer_connect(
    broker: ScriptedBroker, writer: asyncio.StreamWriter, cmd: pb.BaseCommand
) -> None:
    if cmd.type == T.CONNECT:
        broker.write(writer, connected())


@dataclass
class ScriptedBroker:
    """Records every command received; `script` decides the answers."""

    script: Script = answer_connect
    ssl_context: ssl.SSLContext | None = None
    received: list[pb.BaseCommand] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0
    _server: asyncio.Server | None = None
    _writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def start(self) -> ScriptedBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def url(self) -> str:
        scheme = "pulsar+ssl" if self.ssl_context else "pulsar"
        return f"{scheme}://localhost:{self.port}"

    def write(self, writer: asyncio.StreamWriter, command: pb.BaseCommand) -> None:
        writer.write(encode_command(command))

    async def push(self, command: pb.BaseCommand) -> None:
        """Sends `command` to the client on the newest connection (a broker's own
        initiative: a challenge, a close)."""
        writer = self._writers[-1]
        self.write(writer, command)
        await writer.drain()

    def of_type(self, kind: int) -> list[pb.BaseCommand]:
        return [c for c in self.received if c.type == kind]

    async def wait_for(self, kind: int, count: int = 1, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.of_type(kind)) < count:
                self.arrived.clear()
                await self.arrived.wait()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        self._writers.append(writer)
        try:
            while data := await reader.read(65536):
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    self.received.append(frame.command)
                    self.arrived.set()
                    self.script(self, writer, frame.command)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()
