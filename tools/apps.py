#!/usr/bin/env python3
"""Build the two unmodified Kafka applications kop is proven with (issue 20).

Stdlib only, built on tools/provision.py like tools/kafka.py. Resolves Kafka
Streams, Kafka Connect's runtime and its file connectors (all 4.3.1, pinned in
tests/integration/streams_connect/pom.xml) from Maven Central into
<cache>/apps-<version>/lib (Maven caches in ~/.m2), then compiles the Streams word
count (WordCount.java) with javac into <cache>/apps-<version>/classes-<digest>.
Both steps are skipped when current, so a build after the first takes well under a
second. The tests in tests/integration/streams_connect/ call it the same way.

    python3 tools/apps.py build        # resolve + compile; prints the classpath last
    python3 tools/apps.py classpath    # the classpath, exit 1 if not built

Environment: KOP_CACHE_DIR, KOP_MAVEN_SETTINGS, KOP_MAVEN_ARGS as for tools/kafka.py.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import provision
from provision import Tool, fail

KAFKA_VERSION = "4.3.1"
PROG = "tools/apps.py"
TOOL = Tool(PROG, "apps", "Kafka Streams/Connect")
APPS_DIR = provision.REPO_ROOT / "tests" / "integration" / "streams_connect"
SOURCES = (APPS_DIR / "WordCount.java",)


def dist() -> provision.Dist:
    return provision.Dist(
        product="Kafka Streams/Connect",
        version=KAFKA_VERSION,
        pom=APPS_DIR / "pom.xml",
        dir=provision.cache_dir() / f"apps-{KAFKA_VERSION}",
        properties={"kafka.version": KAFKA_VERSION},
        required_jars=tuple(
            f"{name}-{KAFKA_VERSION}.jar"
            for name in ("kafka-streams", "connect-runtime", "connect-file")
        ),
    )


def classes_dir() -> Path:
    """Keyed by the sources and the pom: an edit to either compiles afresh."""
    digest = hashlib.sha256()
    for path in (*SOURCES, APPS_DIR / "pom.xml"):
        digest.update(path.read_bytes())
    return dist().dir / f"classes-{digest.hexdigest()[:12]}"


def classpath() -> str:
    return f"{classes_dir()}:{dist().classpath}"


def is_built() -> bool:
    return dist().is_fetched() and (classes_dir() / ".complete").is_file()


def compile_sources() -> None:
    javac = shutil.which("javac")
    if not javac:
        fail("`javac` is not on PATH; install a JDK 17 (e.g. openjdk-17-jdk-headless)")
    target = classes_dir()
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    start = time.monotonic()
    run = subprocess.run(
        [javac, "-nowarn", "-cp", dist().classpath, "-d", str(partial), *map(str, SOURCES)],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        fail("javac failed on " + ", ".join(p.name for p in SOURCES), run.stderr[-3000:])
    (partial / ".complete").touch()
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    for stale in target.parent.glob("classes-*"):  # earlier sources' builds
        if stale != target:
            shutil.rmtree(stale, ignore_errors=True)
    TOOL.say(f"compiled {len(SOURCES)} source(s) in {time.monotonic() - start:.1f} s: {target}")


def cmd_build(_: argparse.Namespace) -> int:
    provision.require_java()
    with provision.tool_lock(TOOL, provision.cache_dir()):
        dist().fetch(TOOL)
        if not (classes_dir() / ".complete").is_file():
            compile_sources()
    print(classpath(), flush=True)
    return 0


def cmd_classpath(_: argparse.Namespace) -> int:
    if not is_built():
        fail(f"not built; run `{PROG} build`")
    print(classpath())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="resolve the jars and compile (no-op when current)").set_defaults(
        func=cmd_build
    )
    sub.add_parser("classpath", help="print the classpath of a build").set_defaults(
        func=cmd_classpath
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return TOOL.guard(lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
