"""The jars a test's own pom.xml names, fetched by Maven once into kop's cache: the
Java side of a test runs from that classpath, not from a build of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CACHES = Path(os.environ.get("KOP_CACHE_DIR", "~/.cache/kop")).expanduser()


def cached_classpath(pom: Path, name: str) -> str:
    """`<cache>/<name>/*`, holding `pom`'s dependencies; fetched when not complete (a
    staging directory renamed into place, so an interrupted fetch is fetched again)."""
    cache = CACHES / name
    marker = cache / ".complete"
    if not marker.exists():
        assert shutil.which("mvn") and shutil.which("java"), "Java 17 and Maven are required"
        staging = cache.with_suffix(".partial")
        shutil.rmtree(staging, ignore_errors=True)
        subprocess.run(
            ["mvn", "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
             f"-DoutputDirectory={staging}"],
            check=True,
        )  # fmt: skip
        shutil.rmtree(cache, ignore_errors=True)
        staging.rename(cache)
        marker.touch()
    return f"{cache}/*"
