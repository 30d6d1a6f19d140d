"""The stage trace's switch and file: off without KAFKAPY_STAGE_TRACE, on with it (one tab-separated line per event in ``<dir>/stages-<pid>.tsv``, written at
exit and about once a second), in a fresh interpreter each, as a broker starts."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.support.broker_process import ROOT

_SCRIPT = """
import os, time
from kafkapy.replication import stage_trace as t
print(t.ENABLED, os.getpid())
if t.ENABLED:       # as every hook: tested first
    t.event("A", "topic", 3, 100, 1, 2)
    t.event("S", "topic", 3, 2, 100, 5)
if os.environ.get("WAIT"):
    time.sleep(1.1)
    t.event("H", "topic", 3, 100, 9)      # a second later: the buffer is written now
    print(open(os.path.join(os.environ["KAFKAPY_STAGE_TRACE"],
                            f"stages-{os.getpid()}.tsv")).read().count(chr(10)))
    os._exit(0)                           # no exit hook: only the timed write happened
"""


def _run(env: dict) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         timeout=60, cwd=ROOT,
                         env={**{k: v for k, v in os.environ.items()
                                 if k != "KAFKAPY_STAGE_TRACE"},
                              "PYTHONPATH": str(ROOT), **env})
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_off_without_the_variable():
    enabled, _ = _run({})
    assert enabled == "False"


def test_events_are_written_at_exit(tmp_path):
    enabled, pid = _run({"KAFKAPY_STAGE_TRACE": str(tmp_path / "trace")})
    assert enabled == "True"
    lines = (tmp_path / "trace" / f"stages-{pid}.tsv").read_text().splitlines()
    assert lines == ["A\ttopic\t3\t100\t1\t2", "S\ttopic\t3\t2\t100\t5"]


def test_events_are_written_a_second_later_without_exit(tmp_path):
    enabled, pid, written = _run({"KAFKAPY_STAGE_TRACE": str(tmp_path), "WAIT": "1"})
    assert enabled == "True" and written == "3"
