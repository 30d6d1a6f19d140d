"""The partition primitives on real sockets between real processes.

Three echo peers (``tests/support/faults/echo_peer.py``), ``a``, ``b`` and ``c``, each a
process under a group of its own; the test process (root) drives them over connections of
its own.  ``cut(a, b)`` must stall a's and b's connections to each other, the ones opened
before the cut in both directions as well as new ones (whose bytes never reach the other
side), while root and ``c`` still reach both and both still reach ``c``; ``heal()`` must
bring the old connections back and let new ones through.  The chain goes when its ``with``
block ends, even through an exception, and a chain left by a process killed with -9 is
removed by the next ``install()``.
"""
from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from kafkapy.testing._broker import free_port
from tests.support.broker_process import ROOT
from tests.support.faults import net as netmod
from tests.support.faults.net import Net
from tests.support.zookeeper_server import child_setup

def ask(port: int, line: str, timeout: float = 10.0) -> str:
    """One command to a peer over a connection of the test process (root)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall((line + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.decode().strip()


def token() -> str:
    return uuid.uuid4().hex[:10]


@pytest.fixture(scope="module")
def peers(net):
    procs, ports = {}, {}
    for name in ("a", "b", "c"):
        ports[name] = free_port()
        procs[name] = subprocess.Popen(
            [sys.executable, "-m", "tests.support.faults.echo_peer", str(ports[name])],
            cwd=ROOT, stdin=subprocess.DEVNULL,
            preexec_fn=child_setup(net.gid(name)))
    try:
        for name, port in ports.items():
            deadline = time.monotonic() + 20
            while True:
                try:
                    ask(port, "SEEN nothing", timeout=1)
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"peer {name} did not start"
                    time.sleep(0.05)
        yield ports
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


def parallel(calls: dict) -> dict:
    """Run each ``name: (port, line)`` at once; ``name: answer``."""
    with ThreadPoolExecutor(len(calls)) as pool:
        futures = {k: pool.submit(ask, *v) for k, v in calls.items()}
        return {k: f.result() for k, f in futures.items()}


def open_conn(ports, src: str, dst: str) -> str:
    answer = ask(ports[src], f"OPEN {ports[dst]}")
    assert answer.startswith("CONN "), answer
    return answer.split()[1]


def test_cut_stalls_both_ways_and_heal_restores(net, peers):
    ab = open_conn(peers, "a", "b")          # opened by a, accepted by b
    ba = open_conn(peers, "b", "a")          # opened by b, accepted by a
    assert ask(peers["a"], f"SEND {ab} {token()}") == "OK"
    assert ask(peers["b"], f"SEND {ba} {token()}") == "OK"

    net.cut("a", "b")
    assert net.cuts() == [("a", "b")]
    new_ab, new_ba = token(), token()
    during = parallel({
        "established a->b": (peers["a"], f"SEND {ab} {token()}"),
        "established b->a": (peers["b"], f"SEND {ba} {token()}"),
        "new a->b": (peers["a"], f"NEW {peers['b']} {new_ab}"),
        "new b->a": (peers["b"], f"NEW {peers['a']} {new_ba}"),
        "new c->a": (peers["c"], f"NEW {peers['a']} {token()}"),
        "new c->b": (peers["c"], f"NEW {peers['b']} {token()}"),
        "new a->c": (peers["a"], f"NEW {peers['c']} {token()}"),
        "new b->c": (peers["b"], f"NEW {peers['c']} {token()}"),
    })
    assert during == {
        "established a->b": "TIMEOUT", "established b->a": "TIMEOUT",
        "new a->b": "TIMEOUT", "new b->a": "TIMEOUT",
        "new c->a": "OK", "new c->b": "OK", "new a->c": "OK", "new b->c": "OK",
    }, net.rules()
    # Not a byte of the new connections arrived: the acceptor never saw the token.
    assert ask(peers["b"], f"SEEN {new_ab}") == "NO"
    assert ask(peers["a"], f"SEEN {new_ba}") == "NO"
    # Root (the ask() connections themselves) reaches both: checked by every answer above.

    net.heal()
    assert net.cuts() == []
    assert "DROP" not in net.rules()
    # The stalled connections come back once TCP retransmits (backoff of a few seconds).
    deadline = time.monotonic() + 20
    while True:
        after = parallel({"a->b": (peers["a"], f"SEND {ab} {token()}"),
                          "b->a": (peers["b"], f"SEND {ba} {token()}")})
        if after == {"a->b": "OK", "b->a": "OK"}:
            break
        assert time.monotonic() < deadline, after
    assert ask(peers["a"], f"NEW {peers['b']} {token()}") == "OK"
    assert ask(peers["b"], f"NEW {peers['a']} {token()}") == "OK"


def test_a_socket_closed_during_the_cut_sends_nothing_through(net, peers):
    """A closed socket's retransmissions (its unacknowledged data, its FIN) have no owner
    any more: the cut must hold them back all the same, or a peer would receive requests
    written before the close (a ZooKeeper session kept alive by a closed connection)."""
    ab = open_conn(peers, "a", "b")
    assert ask(peers["a"], f"SEND {ab} {token()}") == "OK"
    net.cut("a", "b")
    try:
        late = token()
        assert ask(peers["a"], f"CLOSE {ab} {late}") == "CLOSED"
        time.sleep(3)       # retransmissions at 0.2, 0.6, 1.4, 3.0 s after the close
        assert ask(peers["b"], f"SEEN {late}") == "NO", net.rules()
    finally:
        net.heal()


def test_heal_of_one_pair_leaves_the_other_cut(net, peers):
    net.cut("a", "b")
    net.cut("a", "c")
    try:
        net.heal("a", "b")
        assert net.cuts() == [("a", "c")]
        answers = parallel({"a->b": (peers["a"], f"NEW {peers['b']} {token()}"),
                            "a->c": (peers["a"], f"NEW {peers['c']} {token()}"),
                            "c->a": (peers["c"], f"NEW {peers['a']} {token()}")})
        assert answers == {"a->b": "OK", "a->c": "TIMEOUT", "c->a": "TIMEOUT"}, net.rules()
    finally:
        net.heal()


def test_chain_removed_when_the_block_raises(net):
    n = Net()
    with pytest.raises(RuntimeError):
        with n:
            assert n.chain in netmod.existing_chains()
            n.cut("x", "y")
            raise RuntimeError("scenario failed")
    assert n.chain not in netmod.existing_chains()
    assert f"-j {n.chain}" not in subprocess.run(["iptables", "-S", "OUTPUT"], text=True,
                                                capture_output=True).stdout


def test_stale_chain_of_a_killed_run_removed_at_install(net):
    code = ("import os, signal\n"
            "from tests.support.faults.net import Net\n"
            "n = Net().install(); n.cut('p', 'q')\n"
            "print(n.chain, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == -signal.SIGKILL, run.stderr
    stale = run.stdout.strip()
    assert stale in netmod.existing_chains()
    with Net() as fresh:
        chains = netmod.existing_chains()
        assert stale not in chains and fresh.chain in chains
