"""hack/reference_docs.py, loaded as a module for the docs tests (it is a script, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


@cache
def reference_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reference_docs", ROOT / "hack" / "reference_docs.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up as they are made
    spec.loader.exec_module(module)
    return module
