"""Make our own message schemas (the top-level ``protocol/`` folder) importable.

kafka-python's schema loader reads JSON through ``importlib.resources`` from a
*package*.  An installed kafkapy ships ``protocol/`` as the package
``kafkapy.schemas`` (see pyproject's package-dir); in a source checkout the
folder next to the sources is registered under that name by path (an installed mapping
may name another checkout's).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

PACKAGE = "kafkapy.schemas"


def ensure_schema_package() -> str:
    """Return the package name to pass as ``load_json=`` to kafka-python."""
    if PACKAGE in sys.modules:
        return PACKAGE
    folder = Path(__file__).resolve().parents[2] / "protocol"
    if not (folder / "LeaderAndIsrRequest.json").exists():
        # an installed kafkapy: the mapping ships the folder
        importlib.import_module(PACKAGE)
        return PACKAGE
    # a source checkout: its own folder, even where another checkout is installed
    spec = importlib.util.spec_from_file_location(
        PACKAGE, folder / "__init__.py", submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    spec.loader.exec_module(module)
    return PACKAGE
