"""The reference registry: Apicurio Registry 3.3.3, the runnable distribution Maven
Central publishes (`io.apicurio:apicurio-registry-app:3.3.3:tar.gz:all`), in-memory
storage, its Confluent-compatible API at /apis/ccompat/v7. It needs Java 21 or newer:
`KOP_REGISTRY_JAVA`, else the first `java` found (PATH, then /usr/lib/jvm) that is."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tarfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

VERSION = "3.3.3"
ARTIFACT = f"io.apicurio:apicurio-registry-app:{VERSION}:tar.gz:all"
API = "/apis/ccompat/v7"
MIN_JAVA = 21


def cache() -> Path:
    return Path(os.environ.get("KOP_CACHE_DIR", Path.home() / ".cache" / "kop"))


def java() -> str:
    """A Java of at least MIN_JAVA, or RuntimeError saying what to install."""
    wanted = os.environ.get("KOP_REGISTRY_JAVA")
    found = [wanted] if wanted else []
    found += [p for p in [shutil.which("java")] if p]
    found += sorted(str(p) for p in Path("/usr/lib/jvm").glob("*/bin/java"))
    for candidate in found:
        if _major(candidate) >= MIN_JAVA:
            return candidate
    raise RuntimeError(
        f"Apicurio Registry {VERSION} needs Java {MIN_JAVA}+; none found (tried {found}); "
        "install one (e.g. a Temurin JDK 21) or set KOP_REGISTRY_JAVA"
    )


def _major(path: str) -> int:
    try:
        done = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return 0
    match = re.search(r'version "(\d+)', done.stderr)
    return int(match.group(1)) if match else 0


def fetch() -> Path:
    """The unpacked distribution (downloaded once, through Maven, into the cache)."""
    home = cache() / f"apicurio-{VERSION}"
    if (home / "quarkus-run.jar").is_file():
        return home
    repo = cache() / "apicurio-m2"
    subprocess.run(
        ["mvn", "-q", "-B", "dependency:get", f"-Dartifact={ARTIFACT}", "-Dtransitive=false",
         f"-Dmaven.repo.local={repo}"],
        check=True,
    )  # fmt: skip
    (tarball,) = repo.glob(f"io/apicurio/apicurio-registry-app/{VERSION}/*-all.tar.gz")
    partial = home.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(partial, filter="data")
    partial.rename(home)
    shutil.rmtree(repo, ignore_errors=True)
    return home


@contextlib.contextmanager
def apicurio(port: int, management_port: int, log: Path) -> Iterator[str]:
    """A fresh reference registry on `port`; yields its Confluent API's base URL."""
    home, binary = fetch(), java()
    command = [
        binary, "-Xmx512m", "-Dquarkus.http.host=127.0.0.1", f"-Dquarkus.http.port={port}",
        "-Dquarkus.management.host=127.0.0.1", f"-Dquarkus.management.port={management_port}",
        "-Dapicurio.storage.kind=sql", "-Dapicurio.storage.sql.kind=h2",
        "-Dquarkus.http.access-log.enabled=false", "-jar", "quarkus-run.jar",
    ]  # fmt: skip
    with open(log, "ab") as out:
        proc = subprocess.Popen(command, cwd=home, stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}{API}"
    try:
        await_http(base + "/subjects", proc, log, "Apicurio")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def await_http(
    url: str, proc: subprocess.Popen[bytes], log: Path, who: str, within: float = 120
) -> None:
    """Until `url` answers (RuntimeError if `proc` exits first or `within` passes)."""
    deadline = time.monotonic() + within
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{who} exited with {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"Apicurio did not answer in {within:.0f} s; see {log}"
                ) from None
            time.sleep(0.2)
