"""The bench scripts (``bench/*.py``) as modules for tests: loaded by path under their own
name and registered in ``sys.modules`` (their dataclasses need it); the ``bench/`` dir a
script puts first on ``sys.path`` for its siblings is taken off again, so no other test
imports from it."""
from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.support.broker_process import ROOT


def load_bench_script(script: str, name: str) -> ModuleType:
    """``bench/<script>`` as module ``name``."""
    saved = list(sys.path)
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module
