"""The pipeline's stream command: Ctrl-C only asks its loop to stop.  PySpark's own SIGINT
handler calls into the JVM from inside the signal handler, which breaks the connection when
the main thread is already inside such a call; the command's handler replaces it and only
sets a flag."""
from __future__ import annotations

import os
import signal

from kafkapy.pipeline.cli import Interrupt


def test_ctrl_c_sets_the_flag_and_nothing_else():
    previous = signal.getsignal(signal.SIGINT)
    calls = []
    # Stands for PySpark's handler (a call into the JVM, then KeyboardInterrupt).
    signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        interrupt = Interrupt()
        assert not interrupt.requested
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)     # a second Ctrl-C while it stops
        assert interrupt.requested
        assert calls == [], "the handler it replaced is not run"
    finally:
        signal.signal(signal.SIGINT, previous)
