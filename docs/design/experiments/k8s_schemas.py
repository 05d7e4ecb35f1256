"""Prototype (docs/design/several-instances.md section 5): kubeconform schemas from the
swagger.json that the k8s.io/kubernetes Go module ships. python k8s_schemas.py SWAGGER OUTDIR"""
import json, sys, pathlib
spec = json.load(open(sys.argv[1])); out = pathlib.Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
defs = spec["definitions"]
def strict(node):
    if isinstance(node, dict):
        node = {k: strict(v) for k, v in node.items()}
        if isinstance(node.get("$ref"), str):
            return {"$ref": node["$ref"]}
        if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        # int-or-string
        if node.get("format") == "int-or-string":
            node = {k: v for k, v in node.items() if k not in ("type", "format")}
            node["oneOf"] = [{"type": "string"}, {"type": "integer"}]
        return node
    if isinstance(node, list):
        return [strict(v) for v in node]
    return node
all_defs = {k: strict(v) for k, v in defs.items()}
n = 0
(out / "_definitions.json").write_text(json.dumps({"definitions": all_defs}))
for name, d in defs.items():
    for gvk in d.get("x-kubernetes-group-version-kind", []):
        group = gvk["group"].split(".")[0]
        suffix = f"-{group}-{gvk['version']}" if group else f"-{gvk['version']}"
        schema = {"$ref": f"_definitions.json#/definitions/{name}"}
        (out / f"{gvk['kind'].lower()}{suffix}.json").write_text(json.dumps(schema))
        n += 1
print(n, "schemas")
