#!/usr/bin/env python3
"""Regenerates the checked-in protobuf code from its schemas:

- kop/pulsar/wire/proto/PulsarApi_pb2.py(i) from the vendored PulsarApi.proto;
- kop/storage/proto/batch_layout_pb2.py(i) from batch_layout.proto (the batch layout
  of stored entries: Pulsar's SingleMessageMetadata, under kop's own package name).

    python tools/gen_proto.py            # rewrite the checked-in files
    python tools/gen_proto.py --out DIR  # write them into DIR/<schema dir name>/ instead

Runs protoc from grpcio-tools (a dev dependency, pinned in pyproject.toml), then one
fix-up: Pulsar's `Schema.Type` enum has a value named `None`, which protoc writes into
the .pyi as the annotation `None: ...`, a syntax error for mypy (and for any type
checker). The two lines become comments; the value stays reachable at run time as
`getattr(Schema.Type, "None")`. tests/unit/test_proto_generated.py runs this script
into a temporary directory and compares, so the checked-in code cannot drift.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = {
    REPO / "kop" / "pulsar" / "wire" / "proto": "PulsarApi.proto",
    REPO / "kop" / "storage" / "proto": "batch_layout.proto",
}
_KEYWORD_MEMBER = re.compile(r"^(\s*)(None: .*)$", re.MULTILINE)


def generate(proto_dir: Path, proto: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{proto_dir}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            str(proto_dir / proto),
        ],
        check=True,
    )
    pyi = out / proto.replace(".proto", "_pb2.pyi")
    text = _KEYWORD_MEMBER.sub(
        r'\1# \2  (a Python keyword: getattr(Schema.Type, "None"))', pyi.read_text()
    )
    pyi.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="write into DIR/<schema dir name>/")
    out = parser.parse_args().out
    for proto_dir, proto in SCHEMAS.items():
        generate(proto_dir, proto, proto_dir if out is None else out / proto_dir.parent.name)


if __name__ == "__main__":
    main()
