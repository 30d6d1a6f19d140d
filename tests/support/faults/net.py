"""Real network partitions between processes on loopback, with iptables.

Each process taking part runs under a group id of its own (``Net.gid(name)``: launch it
with ``preexec_fn=child_setup(gid)``, tests/support/zookeeper_server.py); the test process itself stays root (gid 0) and is
never cut off.  ``cut(a, b)`` drops every TCP packet between the members named ``a`` and
``b``, both directions, on connections opened before the cut as on new ones; ``heal()``
lifts every cut.

How: all rules live in one chain of the filter table, ``KPFAULT-<pid>-<n>`` (the fixed
prefix ``CHAIN_PREFIX``, the owning test process's pid and the ``Net``'s number in that
process), jumped to from ``OUTPUT`` for TCP on ``lo``.  On loopback both ends' packets pass
``OUTPUT``, each owned by the socket of its sender, and ``-m owner --gid-owner`` sees the
sender's group (a SYN-ACK is owned by the listening socket, so by the acceptor's group as
well).  The chain keeps, per connection,
who opened it and who accepted it, in the conntrack mark:

* bits 0-7: the index of the member that opened it (set by its first packet, the SYN,
  conntrack direction ORIGINAL, state NEW);
* bits 8-15: the index of the member that accepted it (set by its first packet in the
  REPLY direction, the SYN-ACK).

Members are indexed 1..255; 0 means "not a member" (root, or anyone else).  A cut between
``a`` and ``b`` is two DROP rules after the marking rules: every packet, either direction,
of a connection opened by ``a`` and accepted by ``b``, or opened by ``b`` and accepted by
``a``.  The drop looks at the connection's mark only, not at the packet's owner: a socket
closed by its process is orphaned, and its retransmissions (the FIN, with whatever data was
still unacknowledged) have no owner any more, yet must not get through.  A new connection
from ``a`` to ``b`` never completes: its SYN passes (the acceptor is not known yet), the
SYN-ACK records the acceptor and is dropped, and so is every retried SYN; the acceptor's
process never sees it.  The marking rules are in place from ``install()`` on, before the
members start, so every connection is marked from its first packet.  (A SYN-ACK sent as a
SYN cookie has no owner: under a SYN flood a new connection could complete.)

Cleanup: ``close()`` (also on leaving the ``with`` block, and at interpreter exit) deletes
the jump and the chain; ``install()`` first removes every ``KPFAULT-<pid>-<n>`` chain whose
process is gone (a run killed with -9 leaves its chain behind).  Chains of live processes
(another test run) are left alone, and their members have other group ids
(``GID_BASE`` plus a range chosen by pid and number), so two runs never cut each other.
"""
from __future__ import annotations

import atexit
import itertools
import os
import re
import shutil
import subprocess
import threading

CHAIN_PREFIX = "KPFAULT-"
GID_BASE = 46000
_GIDS_PER_RUN = 32
_ORIGIN_MASK = 0x00FF
_ACCEPTOR_MASK = 0xFF00
_MAX_MEMBERS = 255
_RANGES = 4000                     # gid ranges of _GIDS_PER_RUN ids above GID_BASE
_numbers = itertools.count()


def iptables_available() -> bool:
    """Whether this process can change iptables rules (the binary, and root)."""
    return shutil.which("iptables") is not None and os.geteuid() == 0


def _iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["iptables", "-w", "10", *args], capture_output=True, text=True,
                          check=check, timeout=30)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_chain(chain: str) -> None:
    """Delete the ``OUTPUT`` jumps to ``chain``, then the chain; absent ones are fine."""
    while _iptables("-D", "OUTPUT", "-o", "lo", "-p", "tcp", "-j", chain,
                    check=False).returncode == 0:
        pass
    _iptables("-F", chain, check=False)
    _iptables("-X", chain, check=False)


def existing_chains() -> list[str]:
    """The ``KPFAULT-*`` chains now in the filter table."""
    out = _iptables("-S").stdout
    return re.findall(rf"^-N ({re.escape(CHAIN_PREFIX)}\d+-\d+)$", out, re.MULTILINE)


def remove_stale_chains() -> list[str]:
    """Remove the chains whose owning process is gone; the names removed."""
    stale = [c for c in existing_chains()
             if not _pid_alive(int(c[len(CHAIN_PREFIX):].split("-")[0]))]
    for chain in stale:
        remove_chain(chain)
    return stale


class Net:
    """The iptables chain of this test process; see the module docstring."""

    def __init__(self) -> None:
        number = next(_numbers)
        self.chain = f"{CHAIN_PREFIX}{os.getpid()}-{number}"
        self._base = GID_BASE + ((os.getpid() * 8 + number) % _RANGES) * _GIDS_PER_RUN
        self._index: dict[str, int] = {}
        self._cuts: set[frozenset[str]] = set()
        self._lock = threading.Lock()
        self._installed = False

    # -- lifecycle ------------------------------------------------------------------------
    def install(self) -> "Net":
        """Remove stale chains, create this run's chain (empty of cuts) and jump to it."""
        remove_stale_chains()
        remove_chain(self.chain)
        _iptables("-N", self.chain)
        _iptables("-I", "OUTPUT", "1", "-o", "lo", "-p", "tcp", "-j", self.chain)
        self._installed = True
        atexit.register(self.close)
        for name in list(self._index):
            self._mark_rules(name)
        return self

    def close(self) -> None:
        """Delete the jump and the chain (idempotent)."""
        with self._lock:
            if self._installed:
                remove_chain(self.chain)
                self._installed = False
                self._cuts.clear()
        atexit.unregister(self.close)

    def __enter__(self) -> "Net":
        return self.install()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- members --------------------------------------------------------------------------
    def gid(self, name: str) -> int:
        """The group id of the member ``name`` (allocated, and its marking rules added, on
        first use)."""
        with self._lock:
            if name not in self._index:
                index = len(self._index) + 1
                if index > min(_MAX_MEMBERS, _GIDS_PER_RUN):
                    raise ValueError("too many members")
                self._index[name] = index
                if self._installed:
                    self._mark_rules(name)
            return self._base + self._index[name]

    def _mark_rules(self, name: str) -> None:
        gid, index = str(self._base + self._index[name]), self._index[name]
        # Inserted at the top: marking always runs before the DROP rules appended by cut().
        _iptables("-I", self.chain, "1", "-m", "conntrack", "--ctstate", "NEW",
                  "--ctdir", "ORIGINAL", "-m", "owner", "--gid-owner", gid,
                  "-j", "CONNMARK", "--set-mark", f"{index}/{_ORIGIN_MASK:#x}")
        _iptables("-I", self.chain, "1", "-m", "conntrack", "--ctdir", "REPLY",
                  "-m", "connmark", "--mark", f"0/{_ACCEPTOR_MASK:#x}",
                  "-m", "owner", "--gid-owner", gid,
                  "-j", "CONNMARK", "--set-mark", f"{index << 8:#x}/{_ACCEPTOR_MASK:#x}")

    # -- faults ---------------------------------------------------------------------------
    def cut(self, a: str, b: str) -> None:
        """Drop all traffic between members ``a`` and ``b``, both directions."""
        assert a != b, "a member cannot be cut from itself"
        pair = frozenset((a, b))
        self.gid(a), self.gid(b)
        with self._lock:
            if pair in self._cuts:
                return
            for rule in self._drop_rules(a, b):
                _iptables("-A", self.chain, *rule)
            self._cuts.add(pair)

    def isolate(self, member: str, others) -> None:
        """Cut ``member`` from each of ``others``."""
        for other in others:
            if other != member:
                self.cut(member, other)

    def heal(self, a: str | None = None, b: str | None = None) -> None:
        """Lift the cut between ``a`` and ``b``, or every cut when none is named."""
        with self._lock:
            pairs = list(self._cuts) if a is None else [frozenset((a, b))]
            for pair in pairs:
                if pair not in self._cuts:
                    continue
                x, y = sorted(pair)
                for rule in self._drop_rules(x, y):
                    _iptables("-D", self.chain, *rule, check=False)
                self._cuts.discard(pair)

    def cuts(self) -> list[tuple[str, str]]:
        with self._lock:
            return sorted(tuple(sorted(p)) for p in self._cuts)

    def _drop_rules(self, a: str, b: str) -> list[list[str]]:
        rules = []
        for opener, acceptor in ((a, b), (b, a)):
            mark = self._index[opener] | self._index[acceptor] << 8
            rules.append(["-m", "connmark", "--mark",
                          f"{mark:#x}/{_ORIGIN_MASK | _ACCEPTOR_MASK:#x}", "-j", "DROP"])
        return rules

    def rules(self) -> str:
        """The chain as ``iptables -S`` prints it (for failure messages)."""
        return _iptables("-S", self.chain, check=False).stdout
