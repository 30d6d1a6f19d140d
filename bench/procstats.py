"""Process statistics for the benchmark: memory (RSS) and CPU of the broker under test.

Reads Linux ``/proc/<pid>/status`` (``VmRSS`` = resident set now, ``VmHWM`` = peak resident
set since the process started, both in kB), ``/proc/<pid>/stat`` (``utime``+``stime`` in
clock ticks) and ``/proc/<pid>/task/<tid>/schedstat`` (per thread: ns on a CPU, ns runnable
but waiting for one, times switched in).  Nothing here signals or otherwise touches the
process it watches.

``RssSampler`` runs a daemon thread that samples ``VmRSS`` every ``interval`` seconds; a
benchmark phase is bracketed by ``phase_start()`` / ``phase_end()`` so each phase gets its
own peak RSS, CPU seconds and CPU % (100 % = one core fully busy).
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_MIB = 1024 * 1024


def read_status_kb(pid: int) -> dict[str, int]:
    """``VmRSS``/``VmHWM``/``VmPeak``/``VmSize`` in kB from ``/proc/<pid>/status`` ({} if gone)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM", "VmPeak", "VmSize", "Threads"):
                    out[key] = int(rest.split()[0])
    except (OSError, ValueError):
        pass
    return out


def cpu_seconds(pid: int) -> float | None:
    """User+system CPU seconds consumed by ``pid`` (all its threads), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; fields after the closing paren are fixed.
    fields = data[data.rindex(")") + 2:].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / _CLK_TCK


def sched_stats(pid: int) -> tuple[int, int, int]:
    """(ns on a CPU, ns runnable but waiting for a CPU, times switched in) of ``pid``'s
    threads now, summed (a thread that has ended no longer counts; (0, 0, 0) if gone)."""
    run = wait = switches = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0, 0, 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                a, b, c = f.read().split()[:3]
        except (OSError, ValueError):
            continue
        run, wait, switches = run + int(a), wait + int(b), switches + int(c)
    return run, wait, switches


def sched_delta(before: tuple[int, int, int], after: tuple[int, int, int]) -> dict:
    """What ``sched_stats`` moved between two readings (``sched_figures``)."""
    return sched_figures(*(b - a for a, b in zip(before, after)))


def sched_figures(run: int, wait: int, switches: int) -> dict:
    """ns on a CPU, ns waiting for one and switches in as CPU and waiting seconds,
    switches, and the mean wait per switch-in (µs): how long a wake-up waited for a CPU."""
    return {"run_s": round(run / 1e9, 3), "runnable_wait_s": round(wait / 1e9, 3),
            "switches": switches,
            "wait_per_switch_us": round(wait / switches / 1e3, 1) if switches > 0 else None}


def system_cpu_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds over all cores since boot, from ``/proc/stat``."""
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    vals = [int(v) for v in parts]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    total = sum(vals[:8])
    return (total - idle) / _CLK_TCK, total / _CLK_TCK


def machine_busy_pct(window: float = 1.0) -> float:
    """Busy share of all cores over the next ``window`` seconds (100 = every core busy)."""
    b0, t0 = system_cpu_seconds()
    time.sleep(window)
    b1, t1 = system_cpu_seconds()
    return 100.0 * (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0


def wait_until_quiet(max_wait: float, busy_below: float = 15.0, log=print) -> dict:
    """Wait up to ``max_wait`` s for the machine to be mostly idle (other sessions' load)."""
    t0 = time.monotonic()
    busy = machine_busy_pct()
    while busy >= busy_below and time.monotonic() - t0 < max_wait:
        log(f"machine {busy:.0f}% busy (other processes); waiting for it to settle")
        busy = machine_busy_pct(5.0)
    return {"busy_pct_before": round(busy, 1), "waited_s": round(time.monotonic() - t0, 1),
            "loadavg": os.getloadavg()}


@dataclass
class PhaseStats:
    name: str
    seconds: float = 0.0
    rss_peak_mib: float = 0.0
    rss_end_mib: float = 0.0
    hwm_end_mib: float = 0.0
    cpu_seconds: float = 0.0
    cpu_pct: float = 0.0           # of one core
    machine_busy_pct: float = 0.0  # all cores, whole machine (driver + broker + rest)
    machine_busy_cpu_s: float = 0.0
    loadavg_start: float = 0.0     # 1-minute load average when the phase began
    samples: int = 0
    sched: dict = field(default_factory=dict)   # sched_delta over the phase

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass
class RssSampler:
    """Samples the RSS of ``pid`` in a daemon thread; per-phase peaks and CPU."""

    pid: int | None
    interval: float = 0.05
    _peak_kb: int = 0
    _overall_peak_kb: int = 0
    _samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _phase: PhaseStats | None = None
    _t0: float = 0.0
    _cpu0: float = 0.0
    _sys0: tuple[float, float] = (0.0, 0.0)
    _sched0: tuple[int, int, int] = (0, 0, 0)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> "RssSampler":
        if self.pid is not None and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> int:
        if self.pid is None:
            return 0
        rss = read_status_kb(self.pid).get("VmRSS", 0)
        with self._lock:
            self._samples += 1
            self._peak_kb = max(self._peak_kb, rss)
            self._overall_peak_kb = max(self._overall_peak_kb, rss)
        return rss

    @property
    def overall_peak_mib(self) -> float:
        return self._overall_peak_kb / 1024

    def snapshot(self) -> dict:
        st = read_status_kb(self.pid) if self.pid is not None else {}
        return {
            "rss_mib": round(st.get("VmRSS", 0) / 1024, 1),
            "hwm_mib": round(st.get("VmHWM", 0) / 1024, 1),
            "threads": st.get("Threads"),
            "cpu_seconds": round(cpu_seconds(self.pid) or 0.0, 2) if self.pid else None,
        }

    def _sched(self) -> tuple[int, int, int]:
        return sched_stats(self.pid) if self.pid is not None else (0, 0, 0)

    def phase_start(self, name: str) -> None:
        with self._lock:
            self._peak_kb = 0
            self._samples = 0
        self.sample()
        self._phase = PhaseStats(name)
        self._t0 = time.monotonic()
        self._cpu0 = (cpu_seconds(self.pid) or 0.0) if self.pid else 0.0
        self._sys0 = system_cpu_seconds()
        self._sched0 = self._sched()
        self._phase.loadavg_start = os.getloadavg()[0]

    def phase_end(self) -> PhaseStats:
        self.sample()
        ph = self._phase or PhaseStats("?")
        ph.seconds = time.monotonic() - self._t0
        if self.pid is not None:
            st = read_status_kb(self.pid)
            ph.cpu_seconds = (cpu_seconds(self.pid) or self._cpu0) - self._cpu0
            ph.cpu_pct = 100.0 * ph.cpu_seconds / ph.seconds if ph.seconds > 0 else 0.0
            ph.rss_end_mib = st.get("VmRSS", 0) / 1024
            ph.hwm_end_mib = st.get("VmHWM", 0) / 1024
            ph.sched = sched_delta(self._sched0, self._sched())
        busy1, total1 = system_cpu_seconds()
        dt = total1 - self._sys0[1]
        ph.machine_busy_cpu_s = busy1 - self._sys0[0]
        ph.machine_busy_pct = 100.0 * ph.machine_busy_cpu_s / dt if dt > 0 else 0.0
        with self._lock:
            ph.rss_peak_mib = self._peak_kb / 1024
            ph.samples = self._samples
        self._phase = None
        return ph
