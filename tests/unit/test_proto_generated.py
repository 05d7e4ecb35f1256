"""The checked-in protobuf code is exactly what tools/gen_proto.py makes from its
schemas (so an edit to either side is caught), and protobuf runs on upb, the C
implementation the wire client's speed relies on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WIRE = REPO / "kop" / "pulsar" / "wire" / "proto"
STORAGE = REPO / "kop" / "storage" / "proto"


def test_generated_code_matches_the_schemas(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_proto.py"), "--out", str(tmp_path)],
        check=True,
    )
    for directory, stem in ((WIRE, "PulsarApi"), (STORAGE, "batch_layout")):
        for name in (f"{stem}_pb2.py", f"{stem}_pb2.pyi"):
            fresh = (tmp_path / directory.parent.name / name).read_bytes()
            assert (directory / name).read_bytes() == fresh, (
                f"{name} is stale: run `python tools/gen_proto.py`"
            )


def test_protobuf_uses_the_upb_backend() -> None:
    from google.protobuf.internal import api_implementation

    assert api_implementation.Type() == "upb"


def test_vendored_schema_keeps_its_license_header() -> None:
    text = (WIRE / "PulsarApi.proto").read_text()
    assert "Licensed to the Apache Software Foundation (ASF)" in text.splitlines()[1]
    assert "package pulsar.proto;" in text


def test_the_batch_layout_schema_is_pulsars_on_the_wire() -> None:
    """Both schemas must give the same bytes for the same SingleMessageMetadata."""
    from kop.pulsar.wire.proto import PulsarApi_pb2 as pulsar
    from kop.storage.proto import batch_layout_pb2 as ours

    fields = {"partition_key": "k", "payload_size": 3, "event_time": 9, "null_value": True}
    mine = ours.SingleMessageMetadata(**fields, properties=[ours.KeyValue(key="a", value="b")])
    theirs = pulsar.SingleMessageMetadata(
        **fields, properties=[pulsar.KeyValue(key="a", value="b")]
    )
    assert mine.SerializeToString() == theirs.SerializeToString()
