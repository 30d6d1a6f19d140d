"""Kafka 3.9's own classes as a test oracle: a single-file Java program run on the Kafka 3.9
distribution's libs, one input line in, one answer line out; and the text form those
programs read strings in."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from tests.support.cluster import KAFKA_HOME
from tests.support.kafka_jvm import CLIENT_JVM_FLAGS

LIBS = KAFKA_HOME / "libs"


def kafka39_oracle(source: Path, needs_jar: str) -> Callable[[list[str]], list[str]]:
    """``run(lines) -> answers`` through ``source``; skips without java or without Kafka
    3.9's ``needs_jar``."""
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    if not (LIBS / needs_jar).is_file():
        pytest.skip(f"no Kafka 3.9 at {KAFKA_HOME}")

    def run(lines: list[str]) -> list[str]:
        done = subprocess.run(["java", *CLIENT_JVM_FLAGS, "-cp", str(LIBS / "*"), str(source)],
                              input="\n".join(lines) + "\n", capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        out = done.stdout.splitlines()
        assert len(out) == len(lines), done.stderr[-3000:]
        return out
    return run


def text_arg(text: str | None) -> str:
    """A string as the oracles read it: ``~`` for null, else ``x`` + its UTF-8 in hex."""
    return "~" if text is None else "x" + text.encode("utf-8").hex()
