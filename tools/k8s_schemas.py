"""Kubernetes JSON schemas for kubeconform, generated from Kubernetes' own OpenAPI spec.

Stdlib only. kubeconform's usual schemas are downloaded from a web site at run
time; ours come from `api/openapi-spec/swagger.json` of the `k8s.io/kubernetes`
Go module (tools/helm.py downloads it through the Go module proxy), so the chart
is judged against one pinned Kubernetes release and nothing is fetched while
checking. The layout is kubeconform's (`{{ .ResourceKind }}{{ .KindSuffix }}.json`):
one small file per group/version/kind that refers into one `_definitions.json`.

Strict as the API server is: an object with declared properties takes no other
(a misspelt field is an error, not silently dropped), and the two types the spec
declares as strings but the server also takes as numbers (IntOrString, Quantity)
take both.

    python3 tools/k8s_schemas.py SWAGGER_JSON OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DEFINITIONS = "_definitions.json"
LOCATION = "{{ .ResourceKind }}{{ .KindSuffix }}.json"  # kubeconform -schema-location, in OUT
# Spec'd as strings; the API server also takes numbers (`port: 8080`, `cpu: 1`).
NUMBER_OR_STRING = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "integer",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "number",
}


def strict(node: Any) -> Any:
    """A copy of a schema node with unknown properties refused everywhere below it."""
    if isinstance(node, list):
        return [strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    if isinstance(node.get("$ref"), str):
        return {"$ref": node["$ref"]}  # siblings of $ref are ignored by draft 4 anyway
    out = {k: strict(v) for k, v in node.items()}
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


def definitions(spec: dict[str, Any]) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    for name, schema in spec["definitions"].items():
        if name in NUMBER_OR_STRING:
            defs[name] = {"oneOf": [{"type": "string"}, {"type": NUMBER_OR_STRING[name]}]}
        else:
            defs[name] = strict(schema)
    return defs


def file_name(group: str, version: str, kind: str) -> str:
    """kubeconform's name for a kind: `deployment-apps-v1.json`, `service-v1.json`."""
    first = group.split(".")[0].lower()
    suffix = f"-{first}-{version}" if first else f"-{version}"
    return f"{kind.lower()}{suffix.lower()}.json"


def generate(swagger: Path, out: Path) -> int:
    """Write the schemas of every kind in the spec into out; returns how many kinds."""
    spec = json.loads(swagger.read_text())
    out.mkdir(parents=True, exist_ok=True)
    (out / DEFINITIONS).write_text(json.dumps({"definitions": definitions(spec)}))
    written: dict[str, str] = {}
    for name, schema in spec["definitions"].items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            target = file_name(gvk["group"], gvk["version"], gvk["kind"])
            if written.get(target, name) != name:  # two groups sharing a first label
                raise ValueError(f"{target}: both {written[target]} and {name}")
            written[target] = name
            ref = {"$ref": f"{DEFINITIONS}#/definitions/{name}"}
            (out / target).write_text(json.dumps(ref))
    return len(written)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.rstrip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    print(generate(Path(argv[0]), Path(argv[1])), "kinds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
