"""Commands sent to a Pulsar broker in one turn of the event loop go out in one
write, and always before payload frames sent after them. With a thousand partitions
a new owner sends a FLOW and a GetLastMessageId per partition it opens; one send
call each was 29% of its time during a takeover."""

from __future__ import annotations

import asyncio
from typing import Any

from kop.pulsar.wire.frame_stream import FrameStream
from kop.pulsar.wire.frames import FrameDecoder, encode_command
from kop.pulsar.wire.keepalive import KeepAlive
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

T = pb.BaseCommand.Type


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return False

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass


class _Sink:
    def dispatch(self, frame: Any) -> None:
        pass

    def on_corrupt(self, error: Any) -> None:
        pass


def _flow(consumer: int) -> pb.BaseCommand:
    return pb.BaseCommand(type=T.FLOW, flow=pb.CommandFlow(consumer_id=consumer, messagePermits=1))


def _stream() -> tuple[FrameStream, _Transport]:
    loop = asyncio.get_running_loop()
    keepalive = KeepAlive(loop, "broker", 30.0, 30.0, lambda _c: None, lambda _e: None)
    stream = FrameStream("broker", FrameDecoder(), _Sink(), keepalive, 1 << 20)
    transport = _Transport()
    stream.connection_made(transport)
    return stream, transport


async def test_commands_of_one_turn_go_out_in_one_write_in_order() -> None:
    stream, transport = _stream()
    for consumer in range(3):
        stream.send(_flow(consumer))
    assert transport.writes == []
    await asyncio.sleep(0)
    assert transport.writes == [b"".join(encode_command(_flow(c)) for c in range(3))]


async def test_a_payload_frame_never_overtakes_a_command_sent_before_it() -> None:
    stream, transport = _stream()
    stream.send(_flow(7))
    stream.write_frames([(b"HEAD", b"payload")])
    await asyncio.sleep(0)
    assert b"".join(transport.writes) == encode_command(_flow(7)) + b"HEADpayload"
