"""A log dir on a small filesystem, to fill up (the small_dir fixture)."""
from __future__ import annotations

import subprocess

import pytest


@pytest.fixture
def small_dir(tmp_path):
    path = tmp_path / "small"
    path.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(path)],
                           capture_output=True, text=True)
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (needs root): {mount.stderr.strip()}")
    yield path
    subprocess.run(["umount", "-l", str(path)], check=False)
