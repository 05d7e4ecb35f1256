"""`.proto` text compiled to a FileDescriptorProto by protoc itself, in a worker process.

Why protoc: the grammar, name resolution and checks of `.proto` files are protoc's to
define; grpcio-tools carries it as a Python extension, with the well-known types'
`.proto` files beside it. Why a worker process: protoc holds the GIL while it compiles
(a 700 KB schema took 0.3 s), so on the event loop one registration would stall every
Kafka connection of the instance, and a crash in compiled code would take kop down. The
worker is one process for the whole kop (registrations are rare), started on the first
text schema, memory-capped, killed and replaced when a compile outlasts its deadline.

What protoc may read: the schema is written into a fresh directory with the files its
references name (under their import paths, which kop.registry.references allows only
as plain relative paths, and this module checks again), and the only other include
path is grpcio-tools' own copy of the well-known types. protoc refuses import paths
holding `..`, so a schema cannot make it read (and quote in an error) any other file
of the machine.
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import multiprocessing
import os
import resource
import tempfile
import threading
import time
import warnings
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from google.protobuf import descriptor_pb2

from kop.registry.errors import invalid_schema

# The name a schema given as text gets (Confluent's clients name a file-less schema so).
FILE_NAME = "default.proto"
COMPILE_TIMEOUT_S = 10.0
WORKER_MEMORY_BYTES = 2 << 30
# Registrations waiting for the one worker past this are refused at once (42201): a
# tenant sending text schemas in a loop queues behind itself, not forever; and one
# tenant (the asker's namespace) has at most this many of them, so that another's
# registration waits for two compiles at most, whatever the first sends.
MAX_WAITING = 16
MAX_WAITING_PER_OWNER = 2
_MAX_ERRORS = 5  # protoc's messages quoted in a refusal
PARENT_CHECK_S = 0.5  # how soon a worker whose kop is gone exits


class ProtoErrors(Exception):
    """protoc's own messages (`line:column: message`), for the registry's 42201."""


def compile_text(text: str, files: tuple[tuple[str, str], ...] = ()) -> bytes:
    """The serialized FileDescriptorProto of `text`, which may import `files` (import
    path, `.proto` text: its references'); runs in the worker."""
    import grpc_tools  # type: ignore[import-untyped]
    from grpc_tools import _protoc_compiler as protoc

    known = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory(prefix="kop-proto-") as here:
        root = Path(here).resolve()
        for name, imported in files:
            path = (root / name).resolve()
            if root not in path.parents or name == FILE_NAME:  # checked before, and again
                raise ProtoErrors(f"{name!r} is no path inside the schema's directory")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(imported, encoding="utf-8")
        (root / FILE_NAME).write_text(text, encoding="utf-8")
        try:
            with warnings.catch_warnings():  # protoc's warnings: it took the schema
                warnings.simplefilter("ignore")
                generated = protoc.get_protos(FILE_NAME.encode(), [bytes(root), bytes(known)])
        except protoc.ProtocErrors as exc:
            raise ProtoErrors(_messages(exc.errors())) from None
    own = FILE_NAME.removesuffix(".proto") + "_pb2.py"
    for name, code in generated:
        if name.decode() == own:
            return _serialized_file(code.decode())
    raise ProtoErrors("protoc generated no module for the schema")


def _messages(found: list[object]) -> str:
    missing = [
        getattr(error, "filename", b"").decode(errors="replace")
        for error in found
        if getattr(error, "message", b"") == b"File not found."
    ]
    if missing:
        return (
            f"the schema imports {missing[0]!r}, which no reference names (Protobuf's "
            "well-known types need none)"
        )
    out = []
    for error in found[:_MAX_ERRORS]:
        filename = getattr(error, "filename", b"").decode(errors="replace")
        line, column = getattr(error, "line", -1), getattr(error, "column", -1)
        message = getattr(error, "message", b"").decode(errors="replace")
        where = f"{line + 1}:{column + 1}: " if filename == FILE_NAME and line >= 0 else ""
        out.append(where + message)
    return "; ".join(out) or "protoc refused the schema"


def _serialized_file(code: str) -> bytes:
    """The bytes protoc's Python output passes to `AddSerializedFile`: the compiled
    FileDescriptorProto, as the generated module itself would register it."""
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "AddSerializedFile"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, bytes)
        ):
            return node.args[0].value
    raise ProtoErrors("protoc's output holds no descriptor")


def _start_worker() -> None:
    """The worker's memory capped; protoc's own log lines (warnings such as "no syntax
    specified") dropped: what it refuses comes back as ProtoErrors. And the worker ends
    with kop: a worker waits on its queue for good once kop is gone (killed, or stopped
    without closing the compiler), so it watches whether its parent is still there."""
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)
    os.close(quiet)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class ProtoCompiler:
    """The one worker process and the registrations waiting for it."""

    def __init__(
        self,
        timeout_s: float = COMPILE_TIMEOUT_S,
        max_waiting: int = MAX_WAITING,
        max_per_owner: int = MAX_WAITING_PER_OWNER,
    ) -> None:
        self._timeout_s = timeout_s
        self._max_waiting = max_waiting
        self._max_per_owner = max_per_owner
        self._waiting: dict[str, int] = {}  # owner -> its registrations waiting
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        # One compile at a time, in the order asked: a compile's deadline then counts
        # its own time, not the queue's (a deadline kills the worker). Per event loop.
        self._turns: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}

    async def compile(
        self, text: str, files: tuple[tuple[str, str], ...] = (), owner: str = ""
    ) -> descriptor_pb2.FileDescriptorProto:
        """The schema's FileDescriptorProto; RegistryError 42201 with protoc's messages
        when it is none, when compiling it took too long or too much, or when too many
        of the owner's (or everyone's) wait already."""
        if sum(self._waiting.values()) >= self._max_waiting:
            raise invalid_schema("too many .proto schemas are being compiled; try again")
        if self._waiting.get(owner, 0) >= self._max_per_owner:
            raise invalid_schema(
                f"{self._max_per_owner} of this namespace's .proto schemas are being compiled "
                "already; try again"
            )
        self._waiting[owner] = self._waiting.get(owner, 0) + 1
        try:
            async with self._turn():
                data = await self._run(text, files)
        finally:
            self._waiting[owner] -= 1
            if not self._waiting[owner]:
                del self._waiting[owner]
        return descriptor_pb2.FileDescriptorProto.FromString(data)

    def _turn(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if loop not in self._turns:
            self._turns = {k: v for k, v in self._turns.items() if not k.is_closed()}
            self._turns[loop] = asyncio.Lock()
        return self._turns[loop]

    async def _run(self, text: str, files: tuple[tuple[str, str], ...]) -> bytes:
        pool = self._worker()
        future = asyncio.get_running_loop().run_in_executor(pool, compile_text, text, files)
        try:
            async with asyncio.timeout(self._timeout_s):
                return await future
        except ProtoErrors as exc:
            raise invalid_schema(f"not a valid .proto schema: {exc}") from None
        except TimeoutError:
            self._discard(pool)
            raise invalid_schema(
                f"compiling the .proto schema took over {self._timeout_s:g}s"
            ) from None
        except (BrokenProcessPool, MemoryError):
            self._discard(pool)
            raise invalid_schema("compiling the .proto schema failed (out of memory?)") from None

    def _worker(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
            )
        return self._pool

    def _discard(self, pool: concurrent.futures.ProcessPoolExecutor) -> None:
        """Kill a worker stuck in (or killed by) a compile; the next one starts anew."""
        if self._pool is pool:
            self._pool = None
        processes = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                os.kill(process.pid, 9)

    def close(self) -> None:
        """The worker stopped (a compile in flight is refused); the next starts anew."""
        if self._pool is not None:
            self._discard(self._pool)

    @property
    def worker_pids(self) -> list[int]:
        """The worker's process id, while there is one (for tests and metrics)."""
        pool = self._pool
        return [] if pool is None else [p.pid for p in getattr(pool, "_processes", {}).values()]


# One per kop process: the registry's instances share it.
COMPILER = ProtoCompiler()
