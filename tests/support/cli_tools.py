"""Running the kafkapy command-line tools as a user does (tool())."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path


BIN = Path(sys.executable).parent


def tool(name: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    exe = BIN / f"kafkapy-{name}"
    assert exe.is_file(), f"{exe} is missing: install the console scripts (pip install -e .)"
    return subprocess.run([str(exe), *args], input=stdin, capture_output=True, text=True,
                          timeout=120)
