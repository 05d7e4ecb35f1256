"""The example config shipped in config/ loads as it is."""

from __future__ import annotations

from pathlib import Path

from kop.config.settings import load_config

REPO = Path(__file__).resolve().parents[2]


def test_example_config_loads() -> None:
    config = load_config(REPO / "config" / "kop.toml")
    assert config.port == 9092
    assert config.default_entry_format == "pulsar"
    assert config.retention_ms == 7 * 24 * 3600 * 1000
