"""A script of tools/ imported as a module, for tests of the project's own tooling.
The scripts import their siblings by bare name (tools/ is their sys.path[0]); the
siblings named in `isolate` are taken out of sys.modules again afterwards, so that
tools/pulsar.py does not shadow the official `pulsar` client for other tests."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def load_tool(script: str, name: str, isolate: Sequence[str] = ()) -> ModuleType:
    """tools/`script` as module `name` (another name than its own where that one is
    taken: tools/kafka.py is not kafka-python's `kafka`)."""
    saved = {sibling: sys.modules.pop(sibling, None) for sibling in isolate}
    sys.path.insert(0, str(TOOLS))
    try:
        spec = importlib.util.spec_from_file_location(name, TOOLS / script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(TOOLS))
        for sibling, mod in saved.items():
            if mod is None:
                sys.modules.pop(sibling, None)
            else:
                sys.modules[sibling] = mod
