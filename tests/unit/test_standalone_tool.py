"""`kop standalone` (and so `make run`) finds the checkout's Pulsar tool: the command's
module moved into kop/cli/ once and looked for tools/pulsar.py inside the package."""

from __future__ import annotations

from kop.cli import main


def test_kop_standalone_finds_the_checkouts_pulsar_tool() -> None:
    assert (main._REPO / "tools" / "pulsar.py").is_file()
    assert (main._REPO / "kop" / "cli" / "main.py").is_file()
