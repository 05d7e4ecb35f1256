"""Drop the namespaces a fuzzed kop wrote to, so a fuzz run leaves Pulsar as it found it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


def drop_namespaces(http_url: str, namespaces: list[str]) -> None:
    """Delete every topic of each `tenant/namespace`, then the namespace (Pulsar
    refuses to delete a namespace that still has topics)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for ns in namespaces:
        base = f"{http_url}/admin/v2/persistent/{ns}"
        for path, suffix in ((f"{base}/partitioned", "/partitions"), (base, "")):
            for topic in _get(opener, path):
                name = topic.removeprefix(f"persistent://{ns}/")
                _call(opener, "DELETE", f"{base}/{name}{suffix}?force=true")
        _call(opener, "DELETE", f"{http_url}/admin/v2/namespaces/{ns}")


def _get(opener: urllib.request.OpenerDirector, url: str) -> list[str]:
    try:
        with opener.open(url, timeout=30) as answer:
            return list(json.load(answer))
    except urllib.error.HTTPError:
        return []


def _call(opener: urllib.request.OpenerDirector, method: str, url: str) -> None:
    try:
        opener.open(urllib.request.Request(url, method=method), timeout=60).close()
    except urllib.error.HTTPError as exc:
        if exc.code != 404:  # already gone
            raise
