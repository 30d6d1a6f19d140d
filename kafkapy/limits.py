"""Process limits the broker sets for itself at start-up.

Each log segment holds one descriptor (its ``.log``; indexes are mapped without one) and
each connection one more, so a broker with many partitions or clients needs more than the
usual soft limit of 1024.  Like Kafka's start scripts expect of the service manager, the
soft ``RLIMIT_NOFILE`` is raised to the hard limit; nothing is ever lowered.
"""
from __future__ import annotations

import os
import resource

# Descriptors kept free for connections, checkpoints and segment rolls when placing new
# partitions: at least this many, or this share of the limit.
_RESERVE_MIN = 128
_RESERVE_SHARE = 0.1


def raise_open_file_limit() -> int:
    """Raise the soft descriptor limit to the hard one; return the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft >= hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        return soft
    return hard


def free_descriptors() -> int:
    """Descriptors this process may still open before hitting its soft limit, less a
    reserve for connections and files opened in passing."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 62
    in_use = len(os.listdir("/proc/self/fd"))
    reserve = max(_RESERVE_MIN, int(soft * _RESERVE_SHARE))
    return soft - in_use - reserve


def open_file_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
