#!/usr/bin/env python3
"""The tools that check the Helm chart (helm/kop) without a cluster, pinned and cached.

Stdlib only, on tools/go_modules.py. Everything comes from the Go module proxy:
helm and kubeconform are built with `go install` at pinned versions, and the
Kubernetes JSON schemas are generated (tools/k8s_schemas.py) from the OpenAPI
spec in the `k8s.io/kubernetes` module of the Kubernetes release the chart is
judged against. A build after the first only checks markers (well under a
second); nothing is downloaded while the chart is checked.

    python3 tools/helm.py build    # build what is missing; prints where it is
    python3 tools/helm.py paths    # the same as JSON; exit 1 if anything is missing

Environment: KOP_CACHE_DIR (default ~/.cache/kop); Go's own GOMODCACHE, GOCACHE,
GOPROXY as usual.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

import go_modules
import k8s_schemas
import provision
from go_modules import GoProgram
from provision import Tool, fail

PROG = "tools/helm.py"
TOOL = Tool(PROG, "helm-tools", "helm tools")

HELM_MODULE = "helm.sh/helm/v3"
HELM_VERSION = "v3.22.0"
# The Kubernetes release the chart is judged against: its schemas, and the version
# helm assumes (lint's deprecation check, .Capabilities) as helm's own release
# build sets it from its client-go (v0.37 -> 1.37).
KUBERNETES_VERSION = "v1.37.2"
KUBE_MAJOR, KUBE_MINOR = "1", "37"

HELM = GoProgram(
    name="helm",
    module=HELM_MODULE,
    version=HELM_VERSION,
    package="cmd/helm",
    ldflags=(
        f"-X {HELM_MODULE}/internal/version.version={HELM_VERSION}",
        f"-X {HELM_MODULE}/pkg/lint/rules.k8sVersionMajor={KUBE_MAJOR}",
        f"-X {HELM_MODULE}/pkg/lint/rules.k8sVersionMinor={KUBE_MINOR}",
        f"-X {HELM_MODULE}/pkg/chartutil.k8sVersionMajor={KUBE_MAJOR}",
        f"-X {HELM_MODULE}/pkg/chartutil.k8sVersionMinor={KUBE_MINOR}",
    ),
)
KUBECONFORM = GoProgram(
    name="kubeconform",
    module="github.com/yannh/kubeconform",
    version="v0.8.0",
    package="cmd/kubeconform",
)


def schemas_dir() -> Path:
    """Keyed by the release and the generator's source: a change to either regenerates."""
    digest = hashlib.sha256(Path(k8s_schemas.__file__).read_bytes()).hexdigest()[:12]
    return provision.cache_dir() / f"k8s-schemas-{KUBERNETES_VERSION}-{digest}"


def build_schemas() -> None:
    target = schemas_dir()
    if (target / ".complete").is_file():
        TOOL.say(f"Kubernetes {KUBERNETES_VERSION} schemas already generated: {target}")
        return
    start = time.monotonic()
    module = go_modules.download(TOOL, "k8s.io/kubernetes", KUBERNETES_VERSION)
    swagger = module / "api" / "openapi-spec" / "swagger.json"
    if not swagger.is_file():
        fail(f"k8s.io/kubernetes@{KUBERNETES_VERSION} has no {swagger.relative_to(module)}")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    kinds = k8s_schemas.generate(swagger, partial)
    (partial / ".complete").touch()
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    for stale in target.parent.glob("k8s-schemas-*"):  # an earlier generator's output
        if stale != target and not stale.name.endswith(".partial"):
            shutil.rmtree(stale, ignore_errors=True)
    TOOL.say(
        f"generated {kinds} Kubernetes {KUBERNETES_VERSION} schemas in "
        f"{time.monotonic() - start:.1f} s: {target}"
    )


def paths() -> dict[str, str]:
    return {
        "helm": str(HELM.path),
        "kubeconform": str(KUBECONFORM.path),
        "schema_location": str(schemas_dir() / k8s_schemas.LOCATION),
        "kubernetes_version": KUBERNETES_VERSION.removeprefix("v"),
    }


def missing() -> list[str]:
    gone = [f"{p.name} {p.version}" for p in (HELM, KUBECONFORM) if not p.is_built()]
    if not (schemas_dir() / ".complete").is_file():
        gone.append(f"Kubernetes {KUBERNETES_VERSION} schemas")
    return gone


def cmd_build(_: argparse.Namespace) -> int:
    start = time.monotonic()
    with provision.tool_lock(TOOL, provision.cache_dir()):
        for program in (KUBECONFORM, HELM):
            program.install(TOOL)
        build_schemas()
    TOOL.say(f"ready in {time.monotonic() - start:.1f} s")
    return 0


def cmd_paths(_: argparse.Namespace) -> int:
    gone = missing()
    if gone:
        fail(f"not built: {', '.join(gone)}; run `python3 {PROG} build` (or `make helm-tools`)")
    print(json.dumps(paths(), indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build what is missing (no-op when current)").set_defaults(
        func=cmd_build
    )
    sub.add_parser("paths", help="where the tools are, as JSON").set_defaults(func=cmd_paths)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return TOOL.guard(lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
