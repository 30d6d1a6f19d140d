"""Process limits the broker sets for itself at start-up.

Each log segment holds one descriptor (its ``.log``; indexes are mapped without one) and
each connection one more, so a broker with many partitions or clients needs more than the
usual soft limit of 1024.  Like Kafka's start scripts expect of the service manager, the
soft ``RLIMIT_NOFILE`` is raised to the hard limit; nothing is ever lowered.
"""
from __future__ import annotations

import resource


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
