"""Real clients' request frames, recorded by a proxy in front of kop, as seeds.

    python -m fuzz.capture --upstream localhost:9092 --listen 19099 [--per-version 3]

Point clients at the listen port; every request frame they send is passed on
and the first `per_version` of each API and version are kept in
`tests/corpus/seeds/` (`<schema>-<client id>-<sha1[:8]>.bin`, with size prefix).
Seeds are mutated by the fuzzer beside the frames it builds from kio's schemas.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import re
import struct
import sys
from collections import Counter
from pathlib import Path

from fuzz.corpus import CORPUS
from fuzz.mutate import schema_of

SEEDS = CORPUS / "seeds"
_I32 = struct.Struct(">i")


class Recorder:
    def __init__(self, directory: Path, per_version: int) -> None:
        self._dir = directory
        self._per = per_version
        self._kept: Counter[str] = Counter(p.name.split("-")[0] for p in directory.glob("*.bin"))

    def keep(self, frame: bytes) -> None:
        schema = schema_of(frame)
        if self._kept[schema] >= self._per:
            return
        self._kept[schema] += 1
        client = _client_id(frame)
        digest = hashlib.sha1(frame).hexdigest()[:8]
        self._dir.mkdir(parents=True, exist_ok=True)
        (self._dir / f"{schema}-{client}-{digest}.bin").write_bytes(_I32.pack(len(frame)) + frame)
        print(f"[capture] {schema} from {client}", flush=True)


def _client_id(frame: bytes) -> str:
    """The header's client id (a legacy string after key, version and correlation id)."""
    if len(frame) < 10:
        return "none"
    (size,) = struct.unpack_from(">h", frame, 8)
    name = frame[10 : 10 + size].decode(errors="replace") if size > 0 else "none"
    return re.sub(r"[^A-Za-z0-9_.]+", "_", name)[:40] or "none"


async def _pipe_requests(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, recorder: Recorder
) -> None:
    while True:
        head = await reader.readexactly(4)
        frame = await reader.readexactly(_I32.unpack(head)[0])
        recorder.keep(frame)
        writer.write(head + frame)
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1 << 16):
        writer.write(data)
        await writer.drain()


async def serve(listen: int, upstream: tuple[str, int], recorder: Recorder) -> None:
    async def handle(c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        u_reader, u_writer = await asyncio.open_connection(*upstream)
        try:
            await asyncio.gather(
                _pipe_requests(c_reader, u_writer, recorder), _pipe(u_reader, c_writer)
            )
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            c_writer.close()
            u_writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.capture", description=__doc__)
    parser.add_argument("--upstream", default="localhost:9092")
    parser.add_argument("--listen", type=int, default=19099)
    parser.add_argument("--per-version", type=int, default=3)
    parser.add_argument("--out", type=Path, default=SEEDS)
    args = parser.parse_args(argv)
    host, _, port = args.upstream.rpartition(":")
    asyncio.run(serve(args.listen, (host, int(port)), Recorder(args.out, args.per_version)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
