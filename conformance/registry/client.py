"""A scenario's view of one registry: requests by path, answers observed in a form two
registries can be compared in (status, Confluent's error code, the body with ids named
by order of appearance and schemas parsed)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class Registry:
    def __init__(self, base: str, prefix: str) -> None:
        self.base = base
        self.prefix = prefix  # the scenario's subjects: the same names on both targets
        self._ids: dict[int, str] = {}
        self.seen: list[tuple[str, Any]] = []

    def subject(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def call(self, label: str, method: str, path: str, body: Any = None, ids: bool = False) -> Any:
        """Send, observe (under `label`), and return the decoded answer; `ids`: the
        answer is a list of schema ids (named as ids are, not compared as numbers)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Accept", CONTENT_TYPE)
        if data is not None:
            request.add_header("Content-Type", CONTENT_TYPE)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status, text = answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode()
        try:
            decoded: Any = json.loads(text) if text else None
        except ValueError:
            decoded = text
        shown = decoded
        if ids and status < 400 and isinstance(decoded, list):
            shown = [{"id": one} for one in decoded]
        self.seen.append((label, self._observed(status, shown)))
        return decoded

    def _observed(self, status: int, body: Any) -> Any:
        if status >= 400:
            code = body.get("error_code") if isinstance(body, dict) else None
            return {"status": status, "error_code": code}
        return {"status": status, "body": self._named(body)}

    def _named(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self._named(v, k) for k, v in sorted(value.items())}
        if isinstance(value, list):
            named = [self._named(v) for v in value]
            if named and all(isinstance(v, (str, dict)) for v in named):
                named.sort(key=lambda v: json.dumps(v, sort_keys=True))  # sets, as lists
            return named
        if key == "id" and isinstance(value, int):
            return self._ids.setdefault(value, f"id#{len(self._ids) + 1}")
        if key == "schema" and isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        if key == "subject" and isinstance(value, str):
            return value.removeprefix(self.prefix)
        return value
