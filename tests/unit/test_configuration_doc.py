"""docs/configuration.md is the reference of every setting: each one of `KopConfig` is
named there and nothing else is, and where a row names one setting, its variable is
`KOP_<NAME>` and its default is the code's. A setting added, renamed or re-defaulted
without the document fails here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from kop.config.settings import KopConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
_UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _rows() -> list[list[str]]:
    table = DOC.read_text().split("## Pulsar settings")[0]
    return [
        [c.strip() for c in line.split("|")[1:-1]]
        for line in table.splitlines()
        if line.startswith("| `")
    ]


def _names(cell: str) -> list[str]:
    return re.findall(r"`([a-z_0-9]+)`", cell)


def _shown(cell: str) -> set[str]:
    """How the default cell may state a value: its first code span, or `N MiB`."""
    out = set(re.findall(r"`([^`]*)`", cell)[:1])
    for n, unit in re.findall(r"(\d+) (KiB|MiB|GiB)", cell)[:1]:
        out.add(str(int(n) * _UNITS[unit]))
    return out


def _spellings(default: Any) -> set[str]:
    if isinstance(default, SecretStr):
        default = default.get_secret_value()
    out = {str(default)}
    if isinstance(default, bool):
        out.add(str(default).lower())
    elif isinstance(default, float) and default.is_integer():
        out.add(str(int(default)))
    elif isinstance(default, int):
        out |= {f"{default:,}", f"{default:_}"}
    return out


def test_every_setting_is_documented_and_every_documented_one_exists() -> None:
    named = {n for row in _rows() for n in _names(row[0])}
    settings = set(KopConfig.model_fields) - {"config_file"}
    assert named == settings, {
        "undocumented": sorted(settings - named),
        "no such setting": sorted(named - settings),
    }


def test_a_rows_variable_and_default_are_the_codes() -> None:
    checked = 0
    for setting, env, default, _meaning in _rows():
        names = _names(setting)
        if len(names) != 1:
            continue  # a row of several settings says them together
        (name,) = names
        assert f"`KOP_{name.upper()}`" in env, (name, env)
        value = KopConfig.model_fields[name].default
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if value in (None, ""):
            continue  # unset: the row says what that means in words
        assert _shown(default) & _spellings(value), (name, default, value)
        checked += 1
    assert checked >= 60
