"""The hostile side of `python -m bench.hostile_connections`, each in a process of its
own so it does not share a GIL with the well-behaved client being timed.

`swarm`: connections of several kinds held open (each reopened when kop closes it):
  silent            opens and never sends
  trickle           announces a 100 MiB request, then sends one byte a second
  stall             sends 900 kB of a 1 MiB request, then nothing
  pipeline_fetch    Fetch requests (1 MiB answers) over and over, never reading
  pipeline_metadata Metadata requests (every topic) over and over, never reading
plus `churn`: connection attempts past max_connections, 50 a second.

`garbage`: one client sending malformed frames at a fixed rate, reconnecting
whenever kop closes it: unsupported api keys, truncated Metadata requests,
ApiVersions with a body cut short (kop answers INVALID_REQUEST), sizes past the
limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import time
from typing import Any

KINDS = ("silent", "trickle", "stall", "pipeline_fetch", "pipeline_metadata")
# Metadata of every topic costs kop a Pulsar admin call each (api/metadata.py, not
# the transport), so its flood is measured on its own (`--kinds pipeline_metadata`).
DEFAULT_KINDS = KINDS[:4]
CHURN = len(KINDS)  # slot of the churn counters
# Shared counters: per kind [open, closed], then churn [attempts, refused].
COUNTERS = 2 * (len(KINDS) + 1)


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _header(api_key: int, version: int, correlation: int, flexible: bool) -> bytes:
    head = struct.pack(">hhi", api_key, version, correlation) + struct.pack(">h", 1) + b"g"
    return head + (b"\x00" if flexible else b"")


async def _silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: Any) -> None:
    await reader.read()


async def _trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: Any) -> None:
    writer.write(struct.pack(">i", 100 << 20) + b"x" * 10)
    closed = asyncio.ensure_future(reader.read())
    closed.add_done_callback(lambda f: f.cancelled() or f.exception())
    while not closed.done():
        writer.write(b"x")
        await asyncio.wait([closed], timeout=1.0)


async def _stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: Any) -> None:
    writer.write(struct.pack(">i", 1 << 20) + bytes(900_000))
    await writer.drain()
    await reader.read()


async def _pipeline(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, frame: Any) -> None:
    chunk = frame * 16
    while True:  # until kop closes us: drain raises
        writer.write(chunk)
        await writer.drain()


_RUNNERS = {
    "silent": _silent,
    "trickle": _trickle,
    "stall": _stall,
    "pipeline_fetch": _pipeline,
    "pipeline_metadata": _pipeline,
}


async def _hold(port: int, kind: int, frames: dict[str, bytes], counters: Any, stop: Any) -> None:
    """One connection slot of `kind`, reopened whenever kop closes it."""
    name = KINDS[kind]
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.5)
            continue
        counters[2 * kind] += 1
        try:
            await _RUNNERS[name](reader, writer, frames.get(name))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            counters[2 * kind] -= 1
            counters[2 * kind + 1] += 1
            writer.transport.abort()
        await asyncio.sleep(0.2)


async def _churn(port: int, counters: Any, stop: Any) -> None:
    """Connection attempts past max_connections: kop should close each at once."""

    async def attempt() -> None:
        counters[2 * CHURN] += 1
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return
        try:
            if await asyncio.wait_for(reader.read(1), 2.0) == b"":
                counters[2 * CHURN + 1] += 1
        except (TimeoutError, OSError):
            pass
        finally:
            writer.transport.abort()

    tasks: set[asyncio.Task[None]] = set()
    while not stop.is_set():
        task = asyncio.create_task(attempt())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        await asyncio.sleep(0.02)
    for task in tasks:
        task.cancel()


async def _swarm(
    port: int, mix: dict[str, int], frames: dict[str, bytes], churn: bool, counters: Any, stop: Any
) -> None:
    slots = [KINDS.index(k) for k, n in mix.items() for _ in range(n)]
    random.Random(7).shuffle(slots)
    tasks = []
    for i, kind in enumerate(slots):  # ramp up: the listen backlog is 100
        tasks.append(asyncio.create_task(_hold(port, kind, frames, counters, stop)))
        if i % 50 == 49:
            await asyncio.sleep(0.2)
    if churn:
        tasks.append(asyncio.create_task(_churn(port, counters, stop)))
    while not stop.is_set():
        await asyncio.sleep(0.2)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def swarm(
    port: int, mix: dict[str, int], frames: dict[str, bytes], churn: bool, counters: Any, stop: Any
) -> None:
    """Process entry: holds the connections of `mix` until `stop` is set."""
    asyncio.run(_swarm(port, mix, frames, churn, counters, stop))


def _garbage_frames(metadata: bytes, seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    out = []
    for i in range(4000):
        kind = i % 4
        if kind == 0:  # an api key kop does not serve: closed
            out.append(_frame(_header(9999, 0, i, False) + rnd.randbytes(20)))
        elif kind == 1:  # a real Metadata request cut short: closed
            cut = rnd.randrange(12, len(metadata) - 4)
            out.append(_frame(metadata[:cut]))
        elif kind == 2:  # ApiVersions v3 whose body is cut short: INVALID_REQUEST
            out.append(_frame(_header(18, 3, i, True) + b"\x32ab"))
        else:  # a size past the limit: closed from the prefix
            out.append(struct.pack(">i", 0x7FFFFFF0) + rnd.randbytes(16))
    return out


def garbage(port: int, rate: float, seconds: float, metadata: bytes, counters: Any) -> None:
    """Process entry: malformed frames at `rate` a second for `seconds`. Counters:
    [frames sent, connections kop closed, answers read]."""
    frames = _garbage_frames(metadata, 11)
    sock: socket.socket | None = None
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < seconds:
        due = start + i / rate
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        if sock is None:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setblocking(False)
        try:
            sock.send(frames[i % len(frames)])
            counters[0] += 1
            while data := sock.recv(1 << 16):
                counters[2] += 1
                del data
            counters[1] += 1  # recv gave b"": kop closed it
            sock.close()
            sock = None
        except BlockingIOError:
            pass
        except OSError:
            counters[1] += 1
            with contextlib.suppress(OSError):
                sock.close()
            sock = None
        i += 1
    if sock is not None:
        sock.close()
