"""Namespaces a bench's kop holds for the bench alone, gone with what is in them when it
ends: a system namespace of its own (its node id lock, offsets, transaction state and
leader epochs live there), so a bench kop starts beside `make run`'s, whose are in
`public/__kop`; and any namespace a bench serves its topics from. A bench that left them
behind kept their topics' ledgers on the local Pulsar's disk after every run."""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

from bench.common import log


@contextlib.contextmanager
def bench_namespaces(http_url: str, label: str, serving: bool = True) -> Iterator[dict[str, str]]:
    """KOP_SYSTEM_NAMESPACE, and with `serving` KOP_NAMESPACE, for a bench's kop (in
    `public`, named after `label` and a run id), deleted with their topics on the way out.
    Without `serving` the bench's topics are in `public/default` and it deletes them."""
    run = f"{label}-{uuid.uuid4().hex[:8]}"
    env = {"KOP_SYSTEM_NAMESPACE": f"public/__kop-bench-{run}"}
    if serving:
        env["KOP_NAMESPACE"] = f"bench-{run}"
    try:
        yield env
    finally:
        held = [env["KOP_SYSTEM_NAMESPACE"]]
        held += [f"public/{env['KOP_NAMESPACE']}"] if serving else []
        for ns in held:
            for problem in drop_namespace(http_url, ns):
                log(f"warning: cleaning up {ns}: {problem}")


def drop_namespace(http_url: str, ns: str) -> list[str]:
    """Delete `ns` (tenant/namespace) after its partitioned and other topics, forcibly
    (whatever still holds them is cut off); what went wrong, if anything (a namespace
    never made is nothing to do)."""
    base = http_url.rstrip("/") + "/admin/v2"
    problems: list[str] = []
    for path in (f"persistent/{ns}/partitioned", f"namespaces/{ns}/topics"):
        found, problem = _call("GET", f"{base}/{path}")
        if problem:
            problems.append(problem)
        for full in found or []:
            name = urllib.parse.quote(str(full).rsplit("/", 1)[-1], safe="")
            suffix = "/partitions" if path.endswith("partitioned") else ""
            _, problem = _call("DELETE", f"{base}/persistent/{ns}/{name}{suffix}?force=true")
            if problem:
                problems.append(problem)
    _, problem = _call("DELETE", f"{base}/namespaces/{ns}")
    return [*problems, *([problem] if problem else [])]


def _call(method: str, url: str) -> tuple[Any, str | None]:
    """The decoded answer (None if empty or missing) and a problem, if any; a 404 is
    no problem (gone already, or never made)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=120) as r:
            body = r.read()
    except urllib.error.HTTPError as exc:
        return None, None if exc.code == 404 else f"{method} {url}: HTTP {exc.code}"
    except OSError as exc:
        return None, f"{method} {url}: {exc}"
    return (json.loads(body) if body else None), None
