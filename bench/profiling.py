"""Sampling profiles of the broker under test with py-spy (``run_bench.py --profile``).

``PySpy(pid, out)`` runs ``py-spy record --nonblocking`` against the broker for one benchmark
phase (the broker is never paused); ``stop()`` sends SIGINT to *our* py-spy child so it writes
its output.  With the ``raw`` format (collapsed stacks: ``frame;frame;... count`` per line,
frames as ``function (file)`` because of ``--function``), ``top_functions()`` turns the file into
self-time and inclusive-time tables for the markdown report.  py-spy is installed into the
venv with ``.venv/bin/pip install py-spy``; when it is missing the profile is skipped and the
reason recorded.
"""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path


def find_py_spy() -> str | None:
    cand = Path(sys.executable).parent / "py-spy"
    if cand.exists():
        return str(cand)
    return shutil.which("py-spy")


class PySpy:
    def __init__(self, pid: int, out: Path, fmt: str = "raw", rate: int = 100,
                 subprocesses: bool = True) -> None:
        self.pid = pid
        self.out = Path(out)
        self.fmt = fmt
        self.rate = rate
        self.subprocesses = subprocesses
        self.proc: subprocess.Popen | None = None
        self.error: str | None = None
        self.log = self.out.with_suffix(self.out.suffix + ".log")

    def start(self) -> "PySpy":
        exe = find_py_spy()
        if exe is None:
            self.error = "py-spy not installed (.venv/bin/pip install py-spy)"
            return self
        cmd = [exe, "record", "--pid", str(self.pid), "--output", str(self.out),
               "--format", self.fmt, "--rate", str(self.rate), "--nonblocking"]
        if self.fmt == "raw":
            cmd.append("--function")
        if self.subprocesses:
            cmd.append("--subprocesses")
        self.out.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        time.sleep(0.3)
        if self.proc.poll() is not None:
            self.error = f"py-spy exited {self.proc.returncode}: {self._log_tail()}"
            self.proc = None
        return self

    def stop(self) -> dict:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(60)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
                    self.error = "py-spy did not stop on SIGINT"
            if not self.out.exists() and self.error is None:
                self.error = f"py-spy wrote nothing: {self._log_tail()}"
        info = {"file": str(self.out), "format": self.fmt, "error": self.error}
        if self.error is None and self.fmt == "raw":
            info.update(top_functions(self.out))
        return info

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-1500:]
        except OSError:
            return ""


def _short(frame: str) -> str:
    # "handle (kafkapy/handlers/produce.py)" or ".../site-packages/x.py" -> shorten the path.
    name, _, rest = frame.partition(" (")
    path = rest.rstrip(")")
    for marker in ("/site-packages/", "/kafkapy/", "/lib/python3"):
        i = path.find(marker)
        if i >= 0:
            path = path[i + 1:] if marker != "/kafkapy/" else path[i + 1:]
            break
    return f"{name} ({path})" if path else name


# Frames every sample of the broker passes through (start-up and the loop's entry): left out
# of the inclusive table, where they would only say 100 %.  In the self table,
# "Runner.run (asyncio/runners.py)" is time in uvloop's C code (epoll, socket I/O, C-level
# callbacks), since py-spy shows Python frames only.
_BOILERPLATE = ("_run_code (", "_run_module_as_main (", "<module> (kafkapy/__main__.py",
                "main (kafkapy/cli/", "_run (kafkapy/cli/", "run (uvloop/", "Runner.run (asyncio/")


def top_functions(path: Path, n: int = 25) -> dict:
    """Self and inclusive sample shares from a py-spy raw (collapsed-stack) file."""
    self_c: Counter[str] = Counter()
    incl_c: Counter[str] = Counter()
    total = 0
    for line in Path(path).read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        c = int(count)
        frames = [f for f in stack.split(";")
                  if not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        total += c
        frames = [_short(f) for f in frames]
        self_c[frames[-1]] += c
        for f in set(frames):
            if not f.startswith(_BOILERPLATE):
                incl_c[f] += c
    def table(cnt: Counter[str]) -> list[dict]:
        return [{"function": f, "samples": c, "pct": round(100.0 * c / total, 1)}
                for f, c in cnt.most_common(n)] if total else []
    return {"samples": total, "self": table(self_c), "inclusive": table(incl_c)}
