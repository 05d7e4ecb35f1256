"""kop as a subprocess (`python -m kop.cli.main serve`), optionally under py-spy."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


class KopProcess:
    """Start kop on a free port, wait until it accepts connections, stop it with SIGTERM.

    With `profile` (a path), kop runs as the child of `py-spy record --format raw --gil`,
    which writes collapsed stacks there when kop exits."""

    def __init__(
        self,
        log_path: Path,
        *,
        pulsar_url: str,
        http_url: str,
        profile: Path | None = None,
        profile_rate: int = 100,
        start_timeout_s: float = 120.0,
        extra_args: list[str] | None = None,
        checkout: Path = REPO,
        env: dict[str, str] | None = None,
        cpu: int | None = None,
    ) -> None:
        self.port = free_port()
        self.log_path = log_path
        self.profile = profile
        cmd = [
            sys.executable, "-m", "kop.cli.main", "serve",
            "--port", str(self.port),
            "--admin-port", "0",
            "--pulsar-service-url", pulsar_url,
            "--pulsar-http-url", http_url,
            *(extra_args or []),
        ]  # fmt: skip
        if profile is not None:
            spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
            if not Path(spy).exists():
                raise RuntimeError("--profile needs py-spy: pip install py-spy")
            profile.parent.mkdir(parents=True, exist_ok=True)
            cmd = [
                spy, "record", "--format", "raw", "--gil", "--rate", str(profile_rate),
                "--output", str(profile), "--", *cmd,
            ]  # fmt: skip
        if cpu is not None:  # a core of its own (`bench.cost`): kop alone on it
            cmd = ["taskset", "-c", str(cpu), *cmd]
        self._cmd = cmd
        self._cwd = checkout  # `python -m kop.cli.main` imports the kop of this directory
        self._env = env or {}  # KOP_* settings for this kop, over the bench's environment
        self._start_timeout = start_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self.pid = 0  # kop's own pid (not py-spy's)

    @property
    def bootstrap(self) -> str:
        return f"localhost:{self.port}"

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        logf = self.log_path.open("ab")
        logf.write(f"\n==== {time.strftime('%H:%M:%S')} {' '.join(self._cmd)}\n".encode())
        logf.flush()
        # The Schema Registry on, as users run kop (its framing at the edge is in what the
        # bench measures), on a port of its own: a bench kop runs beside `make run`'s (8081).
        # KOP_SCHEMA_REGISTRY_PORT=0 in the environment measures kop without it.
        registry = {"KOP_SCHEMA_REGISTRY_PORT": str(free_port())}
        env = {**registry, **os.environ, **self._env, "PYTHONUNBUFFERED": "1"}
        self._proc = subprocess.Popen(
            self._cmd, cwd=self._cwd, stdout=logf, stderr=subprocess.STDOUT, env=env,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        logf.close()
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"kop exited with {self._proc.returncode} while starting; see {self.log_path}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                time.sleep(0.2)
        else:
            self.stop()
            raise RuntimeError(f"kop did not listen on {self.port} within {self._start_timeout}s")
        self.pid = self._proc.pid
        if self.profile is not None:
            kids = _children(self._proc.pid)
            if kids:
                self.pid = kids[0]

    def stop(self, timeout_s: float = 30.0) -> int | None:
        proc = self._proc
        if proc is None:
            return None
        self._proc = None
        if proc.poll() is not None:
            return proc.returncode
        target = self.pid or proc.pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(target, signal.SIGTERM)
        try:
            # under py-spy: py-spy exits after kop does, once the profile is written
            return proc.wait(timeout_s + (30 if self.profile else 0))
        except subprocess.TimeoutExpired:
            proc.kill()
            if target != proc.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(target, signal.SIGKILL)
            return proc.wait()

    def kill9(self) -> None:
        """SIGKILL, no word to anyone: what a crash or an OOM kill does."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid or proc.pid, signal.SIGKILL)
            proc.kill()
            proc.wait(10)

    def __enter__(self) -> KopProcess:
        self.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
