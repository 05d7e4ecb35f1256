"""What tools/pulsar.py and tools/kafka.py share: provisioning a reference broker.

Stdlib only, like its two users (they run before any virtualenv exists). Both
brokers are JVMs whose binary tarballs are not reachable from our machines, so
each resolves its runtime classpath from Maven Central with ``mvn
dependency:copy-dependencies`` into a cache outside the repository, runs it
detached with a pid file and a log file, waits for it with progress lines and
reports every failure as one ``<prog>: error: ...`` line. The broker-specific
parts (config, health probe, command line) stay in the two tools; everything
here is written once so that both behave the same.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

REPO_ROOT = Path(__file__).resolve().parent.parent
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
PROGRESS_EVERY = 10.0

NO_JAVA = (
    "`java` is not on PATH; install a JDK 17 "
    "(e.g. `apt-get install -y openjdk-17-jdk-headless`) and re-run"
)
NO_MVN = "`mvn` is not on PATH; install Maven (e.g. `apt-get install -y maven`) and re-run"


class ToolError(Exception):
    """A failure reported as one line on stderr (plus optional context before it)."""

    def __init__(self, message: str, context: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.context = context


def fail(message: str, context: str = "") -> NoReturn:
    raise ToolError(message, context)


@dataclass(frozen=True)
class Tool:
    """Who is talking: the script (for error lines) and the broker (for `[tag]` lines)."""

    prog: str  # "tools/pulsar.py": prefixes error lines and appears in hints
    tag: str  # "pulsar": progress lines read "[pulsar] ..."; also names the lock file
    product: str  # "Pulsar": the broker's name in messages

    def say(self, msg: str) -> None:
        print(f"[{self.tag}] {msg}", flush=True)

    def guard(self, run: Callable[[], int]) -> int:
        """Run a command; turn ToolError and Ctrl-C into one error line and an exit code."""
        try:
            return int(run())
        except ToolError as e:
            if e.context:
                print(e.context, file=sys.stderr)
            print(f"{self.prog}: error: {e.message}", file=sys.stderr, flush=True)
            return 1
        except KeyboardInterrupt:
            print(
                f"{self.prog}: error: interrupted; run `{self.prog} stop` if a {self.product} "
                "was left starting",
                file=sys.stderr,
            )
            return 130


# --------------------------------------------------------------------------- environment


def cache_dir() -> Path:
    """Cache root shared by both tools, outside the repository (jars are hundreds of MiB)."""
    return Path(os.environ.get("KOP_CACHE_DIR") or "~/.cache/kop").expanduser().resolve()


def env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        fail(f"{name}={raw!r} is not a number; unset it or set a number of seconds")


def env_port(value: str | int | None, env: str, default: int) -> int:
    """A port from a flag, else from env, else the default; one clear error if it is bad."""
    raw = value if value is not None else os.environ.get(env, "").strip() or default
    try:
        port = int(raw)
    except ValueError:
        fail(f"port {raw!r} (from --flag or {env}) is not a number; set a port between 1 and 65535")
    if not 0 < port < 65536:
        fail(f"port {port} (from --flag or {env}) is out of range; set a port between 1 and 65535")
    return port


def jvm_opts(env: str, default: Sequence[str]) -> list[str]:
    """Heap/GC options: the env variable replaces the defaults when it is set and non-empty."""
    custom = os.environ.get(env)
    return shlex.split(custom) if custom is not None and custom.strip() else list(default)


def require_java() -> str:
    java = shutil.which("java")
    if not java:
        fail(NO_JAVA)
    return java


def port_open(port: int, host: str = "localhost") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class PortSpec:
    attr: str  # argparse attribute of the flag ("http_port" for --http-port)
    env: str  # "KOP_PULSAR_HTTP_PORT"
    label: str  # "HTTP port", for the "both N" error
    default: int


@dataclass(frozen=True)
class Place:
    """Where a broker lives and how long to wait for it: each from its flag, else
    its env variable (KOP_<NAME>_DATA, _START_TIMEOUT, _STOP_TIMEOUT), else the default."""

    cache_dir: Path
    data_dir: Path
    ports: tuple[int, ...]
    start_timeout: float
    stop_timeout: float


def load_place(
    args: object,
    env_prefix: str,
    ports: Sequence[PortSpec],
    start_timeout: float,
    stop_timeout: float,
) -> Place:
    cache = cache_dir()
    data_raw = (
        getattr(args, "data_dir", None)
        or os.environ.get(f"{env_prefix}_DATA")
        or str(cache / f"{env_prefix.removeprefix('KOP_').lower()}-data")
    )
    values = tuple(env_port(getattr(args, p.attr, None), p.env, p.default) for p in ports)
    for i, a in enumerate(ports):
        for j in range(i + 1, len(ports)):
            if values[i] == values[j]:
                b = ports[j]
                fail(f"{a.label} and {b.label} are both {values[i]}; set {a.env} and {b.env} apart")
    timeout = getattr(args, "timeout", None)
    return Place(
        cache_dir=cache,
        data_dir=Path(data_raw).expanduser().resolve(),
        ports=values,
        start_timeout=float(timeout)
        if timeout
        else env_number(f"{env_prefix}_START_TIMEOUT", start_timeout),
        stop_timeout=env_number(f"{env_prefix}_STOP_TIMEOUT", stop_timeout),
    )


# --------------------------------------------------------------------------- Maven


@dataclass(frozen=True)
class Dist:
    """A broker's runtime classpath, resolved from a pom into <cache>/<dir_name>/lib.

    The marker file records the version and the pom's sha256, so editing the pom
    (or bumping the version) triggers a new resolution; lib/ is only replaced
    once Maven has succeeded.
    """

    product: str  # "Pulsar"
    version: str
    pom: Path
    dir: Path  # <cache>/pulsar-4.0.7
    properties: Mapping[str, str] = field(default_factory=dict)  # -Dkey=value for Maven
    required_jars: tuple[str, ...] = ()  # sanity check: these must be in lib/

    @property
    def lib_dir(self) -> Path:
        return self.dir / "lib"

    @property
    def marker(self) -> Path:
        return self.dir / "fetched.json"

    @property
    def maven_log(self) -> Path:
        return self.dir / "maven.log"

    @property
    def classpath(self) -> str:
        return f"{self.lib_dir}/*"

    def pom_digest(self) -> str:
        return hashlib.sha256(self.pom.read_bytes()).hexdigest()

    def is_fetched(self) -> bool:
        try:
            info = json.loads(self.marker.read_text())
        except (OSError, ValueError):
            return False
        return (
            info.get("version") == self.version
            and info.get("pom_sha256") == self.pom_digest()
            and all((self.lib_dir / jar).is_file() for jar in self.required_jars)
        )

    def fetch(self, tool: Tool) -> None:
        """Resolve the jars unless the cache is current; progress every PROGRESS_EVERY s."""
        name = f"{self.product} {self.version}"
        if self.is_fetched():
            jars = len(list(self.lib_dir.glob("*.jar")))
            tool.say(f"{name} already fetched: {self.lib_dir} ({jars} jars)")
            return
        mvn = shutil.which("mvn")
        if not mvn:
            fail(NO_MVN)
        require_java()

        self.dir.mkdir(parents=True, exist_ok=True)
        tmp_lib = self.dir / "lib.partial"
        shutil.rmtree(tmp_lib, ignore_errors=True)
        settings_xml = maven_settings(self.dir)
        cmd = [
            mvn,
            "-B",
            "-f",
            str(self.pom),
            "-s",
            str(settings_xml),
            *(f"-D{key}={value}" for key, value in self.properties.items()),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={tmp_lib}",
            "-DincludeScope=runtime",
            *shlex.split(os.environ.get("KOP_MAVEN_ARGS", "")),
        ]
        tool.say(
            f"resolving {name} from Maven Central into {self.lib_dir} (maven log: {self.maven_log})"
        )
        start = time.monotonic()
        with open(self.maven_log, "w") as log:
            log.write("$ " + shlex.join(cmd) + "\n")
            log.flush()
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.pom.parent,
            )
            next_report = start + PROGRESS_EVERY
            while proc.poll() is None:
                time.sleep(0.5)
                now = time.monotonic()
                if now >= next_report:
                    next_report = now + PROGRESS_EVERY
                    tool.say(
                        f"still resolving... {now - start:.0f} s elapsed, "
                        f"{count_downloads(self.maven_log)} files downloaded so far"
                    )
        elapsed = time.monotonic() - start
        if proc.returncode != 0:
            shutil.rmtree(tmp_lib, ignore_errors=True)
            fail(
                f"Maven could not resolve {name}: {maven_failure(self.maven_log)}; see "
                f"{self.maven_log} and fix the version/exclusions in "
                f"{self.pom.relative_to(REPO_ROOT)}"
            )
        for jar in self.required_jars:
            if not (tmp_lib / jar).is_file():
                fail(f"Maven succeeded but {jar} is missing from {tmp_lib}; see {self.maven_log}")
        shutil.rmtree(self.lib_dir, ignore_errors=True)
        tmp_lib.rename(self.lib_dir)
        jar_files = list(self.lib_dir.glob("*.jar"))
        size = sum(p.stat().st_size for p in jar_files)
        self.marker.write_text(
            json.dumps(
                {
                    "version": self.version,
                    "pom_sha256": self.pom_digest(),
                    "jars": len(jar_files),
                    "bytes": size,
                    "seconds": round(elapsed, 1),
                    "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                },
                indent=2,
            )
            + "\n"
        )
        tool.say(
            f"fetched {name}: {len(jar_files)} jars, {size / 2**20:.0f} MiB in {elapsed:.1f} s"
        )


def maven_settings(dist_dir: Path) -> Path:
    """KOP_MAVEN_SETTINGS, else a generated settings.xml mirroring everything to Central.

    Parent POMs declare extra repositories (Pulsar's: confluent, restlet) that are
    unreachable here and make Maven fail with "Unknown host"; `mirrorOf *` routes
    every repository to Maven Central instead.
    """
    custom = os.environ.get("KOP_MAVEN_SETTINGS")
    if custom:
        path = Path(custom).expanduser()
        if not path.is_file():
            fail(
                f"KOP_MAVEN_SETTINGS={custom} does not exist; point it to a settings.xml or unset "
                "it"
            )
        return path
    path = dist_dir / "maven-settings.xml"
    path.write_text(
        "<settings>\n  <mirrors>\n    <mirror>\n      <id>kop-central-only</id>\n"
        f"      <mirrorOf>*</mirrorOf>\n      <url>{MAVEN_CENTRAL}</url>\n"
        "    </mirror>\n  </mirrors>\n</settings>\n"
    )
    return path


def maven_failure(log: Path) -> str:
    """Extract the coordinates Maven could not resolve from its log."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "see the log"
    patterns = [
        r"Could not find artifact (\S+)",
        r"Failed to read artifact descriptor for (\S+?):",
        r"Could not transfer artifact (\S+) from",
        r"Failed to collect dependencies at (.+?):\s",
        r"Could not resolve dependencies for project [^:]+:[^:]+:[^:]+:[^:]+: (.+?)(?: ->|$)",
        r"Non-resolvable import POM: (.+?)(?: @|$)",
        r"\[ERROR\] (.+)",
    ]
    for pattern in patterns:
        m = re.search(pattern, text, re.MULTILINE)
        if m:
            return m.group(1).strip().rstrip(":")
    return "no [ERROR] line in the log"


def count_downloads(log: Path) -> int:
    try:
        return log.read_text(errors="replace").count("Downloaded from")
    except OSError:
        return 0


# --------------------------------------------------------------------------- processes


def read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def is_our_process(pid: int, markers: Sequence[str]) -> bool:
    """True if pid is alive and each marker is one of its arguments.

    The markers (main class, config path) guard against pid reuse: a pid file
    can outlive its JVM, and the pid may since belong to anything.
    """
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":  # zombie: exited, not yet reaped
        return False
    return all(m.encode() in cmdline for m in markers)


def running_pid(pid_file: Path, markers: Sequence[str]) -> int | None:
    pid = read_pid(pid_file)
    if pid is not None and is_our_process(pid, markers):
        return pid
    return None


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return f"(no log at {path})"
    tail = data.splitlines()[-lines:]
    return f"--- last {len(tail)} lines of {path} ---\n" + "\n".join(tail)


def rotate(log_file: Path) -> None:
    """Keep the previous run's log as <log>.1 so a failed restart does not erase why
    the last run ended, and a fresh log shows only this run."""
    if log_file.exists() and log_file.stat().st_size > 0:
        log_file.replace(log_file.with_suffix(log_file.suffix + ".1"))


def launch(
    cmd: Sequence[str], *, log_file: Path, pid_file: Path, cwd: Path
) -> subprocess.Popen[bytes]:
    """Start cmd in its own session (it outlives the tool), output to a rotated log_file."""
    rotate(log_file)
    with open(log_file, "ab") as log:
        log.write(("$ " + shlex.join(cmd) + "\n").encode())
        log.flush()
        proc = subprocess.Popen(
            list(cmd),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            start_new_session=True,
        )
    pid_file.write_text(f"{proc.pid}\n")
    return proc


def terminate(pid: int, timeout: float, markers: Sequence[str]) -> str:
    """SIGTERM, wait up to timeout, then SIGKILL. Returns how it ended."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return "already gone"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_our_process(pid, markers):
            reap(pid)
            return "stopped (SIGTERM)"
        time.sleep(0.5)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return "stopped (SIGTERM)"
    for _ in range(40):
        if not is_our_process(pid, markers):
            break
        time.sleep(0.25)
    reap(pid)
    return f"killed (SIGKILL after {timeout:.0f} s)"


def reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@contextlib.contextmanager
def tool_lock(tool: Tool, cache: Path) -> Iterator[None]:
    """Serialize fetch/start/stop of concurrent invocations (e.g. parallel test runs)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{tool.tag}.lock", "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            tool.say(f"another {tool.prog} is fetching/starting/stopping; waiting for it")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


@dataclass(frozen=True)
class Broker:
    """A broker JVM this tool launches: where its pid and logs are, how to recognise it."""

    tool: Tool
    pid_file: Path
    logs: tuple[Path, ...]  # printed (tails) when startup fails; the first is the main one
    markers: tuple[str, ...]  # arguments that identify our JVM (see is_our_process)
    start_timeout: float
    stop_timeout: float
    timeout_env: str  # named in the "not healthy in time" hint

    def running_pid(self) -> int | None:
        return running_pid(self.pid_file, self.markers)

    def terminate(self, pid: int) -> str:
        return terminate(pid, self.stop_timeout, self.markers)

    def _print_tails(self) -> None:
        for log in self.logs:
            if log == self.logs[0] or (log.exists() and log.stat().st_size > 0):
                print(log_tail(log), file=sys.stderr)

    def wait_healthy(
        self,
        check: Callable[[float], Health],
        proc: subprocess.Popen[bytes] | None,
        pid: int,
        started: float,
    ) -> Health:
        """Poll check(remaining_seconds) until healthy, with a progress line every 10 s.

        proc is set when this invocation launched the JVM: only then is it stopped
        on failure; an already-running one is left alone.
        """
        tool = self.tool
        see = " and ".join(map(str, self.logs))
        deadline = started + self.start_timeout
        next_report = time.monotonic() + PROGRESS_EVERY
        while True:
            alive = proc.poll() is None if proc is not None else is_our_process(pid, self.markers)
            if not alive:
                code = f" with exit code {proc.returncode}" if proc is not None else ""
                self._print_tails()
                self.pid_file.unlink(missing_ok=True)
                fail(
                    f"{tool.product} exited during startup{code}; see {see} (try `{tool.prog} "
                    "start --fresh` if the data dir is corrupt)"
                )
            last = check(deadline - time.monotonic())
            if last.healthy:
                return last
            if last.fatal:
                if proc is not None:
                    self.terminate(pid)
                    self.pid_file.unlink(missing_ok=True)
                fail(last.fatal)
            now = time.monotonic()
            if now >= deadline:
                self._print_tails()
                if proc is not None:
                    how = f"it was {self.terminate(pid)}"
                    self.pid_file.unlink(missing_ok=True)
                else:
                    how = f"it is still running (pid {pid}; `{tool.prog} stop` stops it)"
                fail(
                    f"{tool.product} was not healthy within {self.start_timeout:.0f} s (last: "
                    f"{last.detail}); {how}; see {see}, or raise {self.timeout_env}"
                )
            if now >= next_report:
                next_report = now + PROGRESS_EVERY
                tool.say(
                    f"waiting for {tool.product} to become healthy... {now - started:.0f} s "
                    f"elapsed ({last.detail})"
                )
            time.sleep(1.0)

    def stop(self) -> int:
        """Stop the JVM this tool started, and nothing else."""
        tool = self.tool
        pid = self.running_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            tool.say(f"no {tool.product} started by this tool is running; nothing to stop")
            return 0
        tool.say(f"stopping {tool.product} (pid {pid})")
        how = self.terminate(pid)
        self.pid_file.unlink(missing_ok=True)
        tool.say(f"{tool.product} {how}")
        return 0

    def rss_text(self, pid: int | None) -> str:
        rss = rss_mib(pid) if pid is not None else None
        return f", RSS {rss:.0f} MiB" if rss is not None else ""

    def owner_text(self, pid: int | None) -> str:
        """For `status`: who started the healthy broker, and its RSS if it is ours."""
        owner = (
            f"pid {pid}, started by this tool" if pid is not None else "not started by this tool"
        )
        return owner + self.rss_text(pid)

    def stop_for_fresh(self, pid: int) -> None:
        self.tool.say(f"--fresh: stopping the {self.tool.product} this tool started (pid {pid})")
        self.terminate(pid)
        self.pid_file.unlink(missing_ok=True)

    def wipe(self, data_dir: Path) -> None:
        if data_dir.exists():
            self.tool.say(f"--fresh: wiping {data_dir}")
            shutil.rmtree(data_dir)

    def report_healthy(self, detail: str, pid: int, started: float) -> None:
        elapsed = time.monotonic() - started
        self.tool.say(f"{detail} (pid {pid}, healthy after {elapsed:.1f} s{self.rss_text(pid)})")


@dataclass(frozen=True)
class Health:
    """One health probe's verdict, as Broker.wait_healthy consumes it."""

    healthy: bool
    detail: str
    fatal: str = ""  # set: waiting cannot help (e.g. a different broker on the port); fail with it
