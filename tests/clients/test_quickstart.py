"""The README's Quickstart, run as a user runs it.

The broker is started the way ``make run`` starts it (``python -m kafkapy
config/server.properties``; the ``broker`` fixture only moves it to a free port
and a temporary log directory). The ``sh`` blocks of the README's "Quickstart"
section after ``make run`` are then run with bash, unchanged except for the
broker address (127.0.0.1:9092 -> the fixture's) and the venv's python:
first the kcat produce/consume pair, then the kafka-python snippet.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.support.java_clients import ROOT

pytestmark = pytest.mark.timeout(180)

README = ROOT / "README.md"
DEFAULT_ADDRESS = "127.0.0.1:9092"


def quickstart_blocks() -> list[str]:
    text = README.read_text()
    m = re.search(r"^## Quickstart\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, "README.md has no '## Quickstart' section"
    blocks = re.findall(r"```sh\n(.*?)```", m.group(1), re.S)
    blocks = [b for b in blocks if b.strip() != "make run"]
    assert len(blocks) == 2, f"expected a kcat block and a kafka-python block, found {blocks!r}"
    return blocks


def run_block(block: str, bootstrap: str) -> str:
    assert DEFAULT_ADDRESS in block, block
    script = block.replace(DEFAULT_ADDRESS, bootstrap).replace(".venv/bin/python", sys.executable)
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (
        f"README block failed ({proc.returncode}):\n{script}\n--- stdout ---\n{proc.stdout}"
        f"\n--- stderr ---\n{proc.stderr[-4000:]}")
    return proc.stdout


@pytest.mark.kcat
@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat binary not installed")
def test_readme_quickstart(broker):
    kcat_block, python_block = quickstart_blocks()
    assert "kcat -P" in kcat_block and "kcat -C" in kcat_block, kcat_block
    assert "printf 'hello\\nworld\\n'" in kcat_block, kcat_block

    # kcat: produce two lines to an auto-created topic, read them back.
    out = run_block(kcat_block, broker.bootstrap)
    assert out.splitlines() == ["hello", "world"], out

    # kafka-python: produce one keyed record, then read the whole topic from the start.
    assert "KafkaProducer" in python_block and "KafkaConsumer" in python_block, python_block
    out = run_block(python_block, broker.bootstrap)
    assert out.splitlines() == [
        "0 None b'hello'",
        "1 None b'world'",
        "2 b'k' b'from kafka-python'",
    ], out
