"""`kop --version`, `kop config show` and `kop config check`: what an operator runs
before starting kop. Each setting is shown with where its value came from (a flag
beats a KOP_* variable, which beats the TOML file, which beats the default), secrets
never, and a mistyped key in the file names the setting meant."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from kop.cli.main import main

SECRET = "abcdefghijklmnopqrstuvwxyz0123"


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "kop.toml"
    path.write_text(text)
    return str(path)


def test_version_names_the_installed_distribution() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"kop, version {importlib.metadata.version('kop-gateway')}"


def test_show_names_each_values_source_and_never_a_secret(tmp_path: Path) -> None:
    config = _file(tmp_path, f'port = 9192\nadmin_port = 9195\ncluster_secret = "{SECRET}"\n')
    result = CliRunner(env={"KOP_ADMIN_PORT": "9196", "KOP_NODE_ID": "3"}).invoke(
        main, ["config", "show", "--config", config, "--admin-port", "9197"]
    )
    assert result.exit_code == 0, result.output
    lines = {line.split(" ", 1)[0]: line for line in result.output.splitlines()}
    assert lines["port"] == "port = 9192  # file"
    assert lines["admin_port"] == "admin_port = 9197  # flag"  # flag > env > file
    assert lines["node_id"] == "node_id = 3  # environment"
    assert lines["heartbeat_interval_s"] == "heartbeat_interval_s = 1.0  # default"
    assert SECRET not in result.output
    assert lines["cluster_secret"] == 'cluster_secret = "(set, not shown)"  # file'
    shown = tomllib.loads(
        "\n".join(line for line in result.output.splitlines() if not line.startswith("#"))
    )  # what it prints is TOML a config file may start from
    assert shown["port"] == 9192 and shown["admin_port"] == 9197


def test_check_names_the_setting_a_mistyped_key_meant(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["config", "check", "--config", _file(tmp_path, "prot = 1\n")]
    )
    assert result.exit_code == 1
    assert "prot: no such setting (did you mean port?)" in result.output


def test_check_passes_a_valid_file_and_says_what_it_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KOP_SCHEMA_REGISTRY_PORT", raising=False)  # tests/conftest.py's
    result = CliRunner().invoke(
        main, ["config", "check", "--config", _file(tmp_path, "port = 9192\n")]
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "configuration is valid: 1 from file"


def test_check_refuses_an_invalid_value_with_its_reason(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["config", "check", "--config", _file(tmp_path, "node_id = 999\n")]
    )
    assert result.exit_code == 1
    assert "node_id:" in result.output and "255" in result.output
